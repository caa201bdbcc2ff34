// The program whose precompiled headers every test program reuses
// (tests/CMakeLists.txt); it is built, never run as a test.
int main() { return 0; }
