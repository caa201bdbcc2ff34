 B3distilbert.transformer.layer.0.attention.q_lin.biasJ€2
>_|Ç=CÅK½¯ãû=a9)¼GH=¿Øv½Ó£u=Ô9=˜áL=‹¶E»”=5=$DÅ½Op¾OÎC½=è,¾ìm—:ë÷À½qö˜½Bª¼q\½¸yW¼ÒÅ#½ÔN=ñ÷ž=*+Ï¼ÑÉ’=r~9=¸¹<p
”<à÷>