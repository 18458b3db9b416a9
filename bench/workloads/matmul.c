/* SPDX-License-Identifier: MIT */
/* bench/workloads/matmul.c - naive dense matrix multiply, N x N doubles.
 * usage: matmul ijk|ikj [N=1024] [reps=1]
 * ijk: textbook order, inner loop strides down a column of B (cache hostile)
 * ikj: interchanged order, inner loop streams rows of B and C            */
#include <stdlib.h>
#include <string.h>
#include "common.h"

__attribute__((noinline)) static void init(int n, double *a, double *b, double *c)
{
    for (int i = 0; i < n * n; i++) {
        a[i] = (double)((i * 7) % 13) * 0.5;
        b[i] = (double)((i * 11) % 17) * 0.25;
        c[i] = 0.0;
    }
}

__attribute__((noinline)) void matmul_ijk(int n, const double *A, const double *B, double *C)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < n; k++)
                s += A[(size_t)i * n + k] * B[(size_t)k * n + j];
            C[(size_t)i * n + j] = s;
        }
}

__attribute__((noinline)) void matmul_ikj(int n, const double *A, const double *B, double *C)
{
    for (int i = 0; i < n; i++) {
        double *c = C + (size_t)i * n;
        memset(c, 0, sizeof(double) * (size_t)n);
        for (int k = 0; k < n; k++) {
            double a = A[(size_t)i * n + k];
            const double *b = B + (size_t)k * n;
            for (int j = 0; j < n; j++)
                c[j] += a * b[j];
        }
    }
}

__attribute__((noinline)) static double checksum(int n, const double *C)
{
    double s = 0.0;
    for (int i = 0; i < n * n; i++)
        s += C[i];
    return s;
}

int main(int argc, char **argv)
{
    const char *v = argc > 1 ? argv[1] : "ijk";
    int n = argc > 2 ? atoi(argv[2]) : 1024;
    int reps = argc > 3 ? atoi(argv[3]) : 1;
    double t0 = now_s();
    double *A = malloc(sizeof(double) * (size_t)n * n);
    double *B = malloc(sizeof(double) * (size_t)n * n);
    double *C = malloc(sizeof(double) * (size_t)n * n);
    if (!A || !B || !C)
        return 1;
    init(n, A, B, C);
    for (int r = 0; r < reps; r++) {
        if (strcmp(v, "ikj") == 0)
            matmul_ikj(n, A, B, C);
        else
            matmul_ijk(n, A, B, C);
    }
    printf("matmul %s n=%d checksum=%.6e\n", v, n, checksum(n, C));
    free(A); free(B); free(C);
    report_elapsed(t0);
    return 0;
}
