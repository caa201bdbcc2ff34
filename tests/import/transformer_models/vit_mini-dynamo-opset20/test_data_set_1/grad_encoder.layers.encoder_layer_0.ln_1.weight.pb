 B*encoder.layers.encoder_layer_0.ln_1.weightJ€&YG?üÄ¾Å¾€‰½žJ“¾$£€¾m#[¿ì²_=¿¡Å>!¨
¿ç§¿	©¾š†À>0F¾¹¾»>k—>4ƒè>{k¨<Ny?õª=›X¾Q"t¾+¦%>1ÄÔ¿0}b¾§ÓY¾¾—"¿¶ó>:Iý>ýÙV><D©=