(Bencoder.layers.0.norm1.biasJаъn)@Oa@╝A╝oW┴И¤&?╘sA|│Ы>к╦IA╦w!@q°Ь└v╨Щ@Yап@=:@щ╬└0єAюYf└~B╛┐╙е?f
|@jпн@р	Asтq@╘YAjJ@█jrA╫╛:?{┌O@6@>┘5Ш└НЪMA#Rх@nv┐┤╓╥?║)@∙ш/AЪ5┴t└4╚6A
Вk┴Уq┬└