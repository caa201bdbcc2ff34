
B	head.biasJ(~Sa>iΡ€?Χ#ΏJνΎ^k?‰Θ?&H@Fa?αφύΎ³ΐ