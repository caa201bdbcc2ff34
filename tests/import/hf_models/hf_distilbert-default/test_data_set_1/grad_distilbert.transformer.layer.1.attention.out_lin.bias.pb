 B5distilbert.transformer.layer.1.attention.out_lin.biasJ€—†f½ÿ“—>J‘ ½´"Ì½94>ÇÕ=·n½>¿t¹½ý¾N)Ó=…Ö±¾?q¾°ƒÉ<Ú`«=y
½h6d¾rôô¾›Ìž>ipú=bÒW¾÷Ál=f€¾Sûºùù=.¨ï>9¡«¼~M>Öjù=åÉ!=OY	½É[ñ¾‰bž=