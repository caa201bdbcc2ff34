 B;encoder.layers.encoder_layer_0.self_attention.out_proj.biasJЂS\DѕбЊѕЭ?уч=Џ
Uѕ;)†?;џR?MТuЅХ'я>BGяЅ+lЉїћHU>њRЋїљЂІ>mЃbѕкtTїО¦»<Ѓљ5ЅЈВЏѕ;}їFХ•>G6кѕЉ#†ѕв‡Ё>Ч¤Э>Fйќ=Я`Ю>Q?a»Ќѕ$}>„-\ѕj';>