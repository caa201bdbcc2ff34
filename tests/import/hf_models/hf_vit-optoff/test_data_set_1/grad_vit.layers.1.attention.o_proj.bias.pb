 B"vit.layers.1.attention.o_proj.biasJ€5g?!ËD¿Z¢3?ÿH¿>W
¿Z7Y?±É£¿
>i¿\+?ÿ…¾z¾²ö¾°T°?l©º=^Z’>®°û<F-„>j£X>4:?z"È>ï¹¯?˜tˆ¿V’‹¾,ªË>›´Y¿ÅÌ=uí¶=%¡>¼–¾ßÖ?(vµ¿4s_¾