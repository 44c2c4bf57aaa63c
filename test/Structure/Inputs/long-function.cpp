// Input of test/Structure/limits.test: preprocessor lines that look like
// function heads, a multi-line macro with braces, and one function of 12
// lines (`twelve`) beside one of 3 (`three`).
#if defined(__x86_64__) && !defined(NO_SIMD)
namespace simd {
#define PAIR(a, b)                                                             \
  struct a##b {                                                                \
    int first(int x) { return x; }                                             \
    int second(int x) { return x; }                                            \
    int third(int x) { return x; }                                             \
  };
PAIR(x, y)
int twelve(int x) {
  int y = x;
  y += 1;
  y += 2;
  y += 3;
  y += 4;
  y += 5;
  y += 6;
  y += 7;
  y += 8;
  return y;
}
int three(int x) {
  return x;
}
} // namespace simd
#endif
