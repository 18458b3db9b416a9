/* replay */
#include <stdint.h>
#include <stddef.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int main(void){return LLVMFuzzerTestOneInput((const uint8_t*)"",0);}
