 B%model.layers.0.input_layernorm.weightJ€ÛÛA©òIÂjÌ@˜C!ÂÊ4A×jB¾³@/“BªÈsÁ‡=Œ?ïù¿q÷¬AHº@¸°FÀÅ~‘ÁNƒBæ¢¯A&
ÁËÊÂË|ÖÁtB\:ÊAâ]xAşACBû`%Á”ÀB‰@,ı¥Bšä5BCL“¿!ÖÂŠ)ùÁ