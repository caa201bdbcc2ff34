 B.model.layers.0.post_attention_layernorm.weightJ€õD®AòúA‘SBŠh§@ğ*øAUBv1®ÁÙ·AxÆJÁêÀí±A—şhÀvfçA¿Õ*ÁÏÿ;A¤"›@š§¡@^CByX€ÁÁ\á@étÁlÙA+mØAœ
ˆÀRÚ‘Àçß@òHôÁ³dºA=Öã¿óÏÁTÇA/J8A