
Bheads.head.biasJ(æúß>E,O?a‘¼>«Ó¾vc?„!z>Ée¼?ŠÙŠ¿•M­?aXö¾