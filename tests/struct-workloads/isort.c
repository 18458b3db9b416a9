/* SPDX-License-Identifier: MIT */
/*
 * isort.c: insertion sort whose inner loop's condition is an inlined comparator, for
 * tests/e2e/t0214-struct-loop-scopes.sh (built there with -O2 -g -fPIC -shared).  The
 * comparator compares two keys, so its branches stay in its own inline scope: the loop's
 * controlling branch is inside "less", while its body is "move" and the caller's code.
 */
struct rec {
	long key, val;
};

static inline __attribute__((always_inline)) int less(const struct rec *a, const struct rec *b)
{
	return a->key < b->key || (a->key == b->key && a->val < b->val);
}

static inline __attribute__((always_inline)) void move(struct rec *to, const struct rec *from)
{
	*to = *from;
}

/* Move *LAST down to its place; something smaller is known to sit below it. */
void unguarded_insert(struct rec *last)
{
	struct rec v = *last;
	struct rec *next = last - 1;
	while (less(&v, next)) { /* LOOP-LESS */
		move(last, next);
		last = next;
		--next;
	}
	move(last, &v);
}

void insertion_sort(struct rec *first, struct rec *end)
{
	for (struct rec *i = first + 1; i < end; i++) { /* LOOP-SORT */
		struct rec v = *i;
		struct rec *last = i, *next = i - 1;
		while (next >= first && less(&v, next)) { /* LOOP-GUARDED */
			move(last, next);
			last = next;
			--next;
		}
		move(last, &v);
	}
}
