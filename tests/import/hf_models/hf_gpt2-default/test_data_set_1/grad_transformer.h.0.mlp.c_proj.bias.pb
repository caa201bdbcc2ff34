 Btransformer.h.0.mlp.c_proj.biasJ€HÉ•B…K‘A"µÂÍ¢Aú¶‚B]—ÂÚe,ÂqEÁ‹üÙ@cÑ*Á=ÄBã¼3AìÆÂD"MBŸµ˜ÂWS€ÂÁ·@°É³BS1BiúPB-ç¸À"L·ÂÀÛÂ|ÜÁ‰ğA)ABZ
BÆÂÖŠ.ÂNCV†Âo4‰B