 Btransformer.h.1.ln_2.weightJ€Z“*B¥H@¼²XA”Ë=Ù+Áž™r@õžA€•Â«£ÀK¦yA0æ§À.
¿d¿@§GIB.ãž@%ˆAM¥Ý>$—|B
dIAÜ§BtÑAlúÇAó‡«A_öÁƒ'Ù@Ø*Áo3ÁOÈAxŠºÁú)ÀºœGASojB