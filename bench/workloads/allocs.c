/* SPDX-License-Identifier: MIT */
/* bench/workloads/allocs.c - allocation-heavy programs.
 * usage: allocs churn [millions=20] | allocs trees [max_depth=18]
 * churn: a cache of 4096 live records; each step frees the oldest and makes a new one, from
 *   one of three functions (a 16-400 byte string filled with memset, a 48-byte list node, or
 *   a 64-1024 byte buffer from realloc'ing the previous one), MILLIONS million steps.
 * trees: binary trees, as in the Benchmarks Game.  For each depth d = 4, 6, ..., max_depth,
 *   builds 2^(max_depth - d + 4) trees of depth d, checks each and frees it; one long-lived
 *   tree of max_depth lives throughout.  Nodes are 24-byte blocks from malloc; every eighth
 *   node also carries a label of 16 to 112 bytes from calloc.  Every allocation has its own
 *   calling context (the path of left and right calls), the worst case for MEMLEAK. */
#include <stdlib.h>
#include <string.h>
#include "common.h"

struct node {
    struct node *left, *right;
    char *label;
};

__attribute__((noinline)) struct node *make(int depth, unsigned *seq)
{
    struct node *n = malloc(sizeof(*n));
    if (!n)
        exit(2);
    n->label = NULL;
    if ((++*seq & 7) == 0) {
        n->label = calloc(1, 16 + (*seq >> 3) % 7 * 16);
        if (!n->label)
            exit(2);
        n->label[0] = 'x';
    }
    n->left = depth > 0 ? make(depth - 1, seq) : NULL;
    n->right = depth > 0 ? make(depth - 1, seq) : NULL;
    return n;
}

__attribute__((noinline)) long check(const struct node *n)
{
    return n ? 1 + (n->label != NULL) + check(n->left) + check(n->right) : 0;
}

__attribute__((noinline)) void release(struct node *n)
{
    if (!n)
        return;
    release(n->left);
    release(n->right);
    free(n->label);
    free(n);
}

#define LIVE 4096

__attribute__((noinline)) char *make_string(unsigned r)
{
    size_t n = 16 + r % 385;
    char *s = malloc(n);
    if (!s)
        exit(2);
    memset(s, 'a' + (int)(r % 26), n - 1);
    s[n - 1] = 0;
    return s;
}

__attribute__((noinline)) char *make_node(unsigned r)
{
    long *p = malloc(48);
    if (!p)
        exit(2);
    for (int i = 0; i < 6; i++)
        p[i] = (long)r + i;
    return (char *)p;
}

__attribute__((noinline)) char *grow_buffer(char *old, unsigned r)
{
    size_t n = 64 + r % 961;
    char *p = realloc(old, n);
    if (!p)
        exit(2);
    memset(p, 0, n);
    return p;
}

static int churn(long steps)
{
    static char *live[LIVE];
    unsigned r = 12345;
    long sum = 0;
    for (long i = 0; i < steps; i++) {
        r = r * 1103515245u + 12345u;
        unsigned slot = (unsigned)i % LIVE;
        switch ((r >> 16) % 3) {
        case 0:
            free(live[slot]);
            live[slot] = make_string(r >> 8);
            break;
        case 1:
            free(live[slot]);
            live[slot] = make_node(r >> 8);
            break;
        default:
            live[slot] = grow_buffer(live[slot], r >> 8);
            break;
        }
        sum += live[slot][0];
    }
    for (int i = 0; i < LIVE; i++)
        free(live[i]);
    return (int)(sum & 1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "churn";
    double t0 = now_s();
    if (strcmp(mode, "trees")) {
        long steps = (argc > 2 ? atol(argv[2]) : 20) * 1000000L;
        int odd = churn(steps);
        printf("allocs: churn, %ld steps (%d)\n", steps, odd);
        report_elapsed(t0);
        return 0;
    }
    int max_depth = argc > 2 ? atoi(argv[2]) : 18;
    unsigned seq = 0;
    struct node *keep = make(max_depth, &seq);
    long total = 0;
    for (int d = 4; d <= max_depth; d += 2) {
        long trees = 1L << (max_depth - d + 4);
        for (long i = 0; i < trees; i++) {
            struct node *t = make(d, &seq);
            total += check(t);
            release(t);
        }
    }
    total += check(keep);
    release(keep);
    printf("allocs: depth %d, %ld nodes and labels checked\n", max_depth, total);
    report_elapsed(t0);
    return 0;
}
