Bfeatures.1.1.attn.proj.biasJ@Öâ,¾ö¥¾Sø?<†&¾ç
j?rÑc¿^(œ¿;P¾„GÄ>iÁ-¾‹s¾“­E?7ür¿ÕÁÁ?×Ÿq¾BÀl¿