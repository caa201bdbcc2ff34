 B3distilbert.transformer.layer.0.attention.v_lin.biasJЂЋЪ
ѕ›Ъе»`dРѕ Й=$їЪr^ѕ$т°=С¬=–=Г=°)‚ѕ6К.ѕ?лѕЦ5_ѕяѕ>
кҐѕ«ђ=8Pљ<,HЌ>ҐЊи=л62Ѕр
?Јk­=jЕм:ціѕА…M>М0Ч=(j>.Э.ѕ6T°ѕwWПЅCС=до–ѕ