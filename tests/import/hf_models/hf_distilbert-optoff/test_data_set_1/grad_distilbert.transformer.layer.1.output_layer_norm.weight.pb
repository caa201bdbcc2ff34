 B7distilbert.transformer.layer.1.output_layer_norm.weightJ€†R½
Ñ!»Œ‹>C–<D„¡>&Ë°¼M”®¾[;¿²ü>È…>îk¿àÉ=ªÉ=RA¬>èà->jt-¾„¯×>]/~¾MÛ°¾Yf—½¤='©?.O½©
?Â°¾Ã—¾UoR¿|v}¾Î”¸>R!y½ýF­>ù ¾