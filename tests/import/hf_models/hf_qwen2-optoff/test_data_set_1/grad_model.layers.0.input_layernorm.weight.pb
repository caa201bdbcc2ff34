 B%model.layers.0.input_layernorm.weightJ€:­bÁyÁ5Í#C‡DB´3BVÂñßC"q/Áß8®A¬”UÁ nAy=Bë×Á‰¶BÂÄU@Û£ŞB™BÂíZBü}ÛÀê0GCŞ4çBÈU¿¹³Â"´¨BR¹zBóDšÂœBÆÁÁDÑ‹ÂN6Ax?¤À
ƒfÁ