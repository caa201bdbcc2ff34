 B.bert.encoder.layer.1.attention.self.value.biasJ€À¾¾µäÂ½T@i½éóe<Ó÷¥>mH½Î¾>1RB>ıah=é È=S¶<ê£*¾â
I>Wk¾ú€‹>ANã½½À„>Êç}=ÜºÏ=L¾J©> ¾ú¾å¶½ò6è:Ö‘5>˜>3Å#¾ a,=™©>¼ÓJ
>U^>