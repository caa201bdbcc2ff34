 B(encoder.layers.encoder_layer_0.ln_1.biasJ€>a§?Õ|‘>ŒºG¿Zì=ƒ„¿drS¿VÓM¿úþ½?ÖÓ;?ØHD¿I€j¿}ñ½|í+?­E¿˜¨>ù¼ºD³¿±kÚ>Ôs>ÞA¿y«?Ñ:|½ak)?z!?µ’«¿E
=¿lŽ?‡9z¾>¸T¿ =(>g<x{ ¾