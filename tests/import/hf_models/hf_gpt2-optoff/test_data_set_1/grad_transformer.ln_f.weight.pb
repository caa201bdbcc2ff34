 Btransformer.ln_f.weightJ€6óSÂm³ŽÁWB;$3Âïqð¿ÑDžÁQ@M_ìAÍ€¾ÂòÏAÍæÂ‰ºÂ€¥=BáïÎAÛá@0sB“æ}A°ÆrA/Å£ÁÂ×ÏA25ˆÂ
Œ	BtÊ©Á¸>—Â²òSÀt%X?‹ù”BEíÁßw»Áã ÂYAAñÄÂ