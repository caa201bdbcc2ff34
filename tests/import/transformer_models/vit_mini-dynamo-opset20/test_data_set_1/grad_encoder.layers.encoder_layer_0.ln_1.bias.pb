 B(encoder.layers.encoder_layer_0.ln_1.biasJ€ê™?â1I¿^ƒ¾Òf?/¿_½uV>ªâi?1îÁ¾r©>òFš¿‚ ¿
¥>õ÷Ä>
î½Á¢¿bHT>ßéÑ<Ëbß¾P†>8­–¿ ä¾=!ø>§è‚?Oº±?¾á?‹A¬¾E*‹¾t¸J=v9Œ?§È¾øéc½PÒ¾=