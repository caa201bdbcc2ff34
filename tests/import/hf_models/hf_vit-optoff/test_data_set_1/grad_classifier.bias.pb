
Bclassifier.biasJ(«PБ?[?…?УРїр†в?¤ўЃ>dћ?W№0@Аtј‰АЃ‡1@