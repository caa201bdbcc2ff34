 B0bert.encoder.layer.1.attention.output.dense.biasJ€WP¾6'¾î 
?”éÉ=«çø=çLº¾óø:>žèý½xú—>¸_Ä>cœ–¾|7>~[Ã=r¼š{þ¼3[>øC±;SÇ>0×½	²(¾æ…I¾‰,=¸FÁ¼Ç¦¼4Š=¯Âf>ñ<Í¾èÓ³¾¦½îv¦½yE¢½Ó˜ü½