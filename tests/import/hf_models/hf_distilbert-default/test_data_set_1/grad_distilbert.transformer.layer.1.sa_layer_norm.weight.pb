 B3distilbert.transformer.layer.1.sa_layer_norm.weightJ€‘[¾(½ˆO/>Ð¦ë½îÉ×>Þ€y¾ßVw¾Ø¾¿Xý‡>éæ¹J´_¿|Ö°½‘ð‚>0”B=§b½Û»¸=þò?“”å¾øJ¾`ó/¾\/?½$·ž>(
W½”›g=yék<Êç¼|é½@’•¾å'-¼dqˆ=‹Ÿ>«$Ô½