 B.model.layers.1.post_attention_layernorm.weightJ€:Á›ÓA:Á„¥Á$’Á„¿É9@½vB¼~A‡ÀƒÁ@96?&±Aø!Ä@6:À@ì@ ¥Á
ñø¾ì¼>òŒéÀ6W‚Àø\Æ¿Q¥n@Îä"@Qé”À™KA&3¹?!ÁŒ”«A[+…Àìƒ¾ÀSgAM-9Á