 Btransformer.h.1.mlp.c_proj.biasJ€ÿÁzÚˆ@µzÕÁ‘†@@êï@¢¯‰ÂžlÀUÅîA0—GBþ[B„ó.Á
˜üA8úÁƒíBuÍ‹Â×ÑÎÁã® BVÊÛAŒ|öÁnßOA·ýUA Ê)Âþ`lÂh[·Á%±!@]A<ÁdoB(ªïAuf±Â!âBfCÂãcB