# SPDX-License-Identifier: MIT
# processes-lib.sh: the programs of the tests on processes (t0409, t0456), sourced after
# test-lib.sh: a shell pipeline `./producer first | ./consumer`, the producer forking a child
# that does not exec, the consumer reading in a named thread.  processes_setup builds and
# measures it into m, prof writes db and fathom-dump its dump; pid_of PROGRAM [N] is the pid of
# the Nth process of PROGRAM.
command -v python3 >/dev/null 2>&1 || skip_all "no python3 to read the JSON output"
cat >spin.h <<'PROGRAM'
#include <time.h>
static volatile double sink;
/* S seconds of this thread's CPU time, whatever the machine's speed: it is sampled. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
#define SPIN(name) \
	__attribute__((noinline)) static void name(double s) \
	{ \
		double end = cpu_now() + s; \
		while (cpu_now() < end) \
			for (int i = 0; i < 10000; i++) \
				sink += i * 0.5; \
	}
PROGRAM
cat >producer.c <<'PROGRAM'
#include "spin.h"
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
SPIN(producer_work)
SPIN(forked_child_work)
int main(int argc, char **argv)
{
	pid_t c = fork();
	if (c == 0) {
		forked_child_work(0.3);
		_exit(0);
	}
	producer_work(0.3);
	for (int i = 0; i < 1000; i++)
		printf("line %d of %s\n", i, argc > 1 ? argv[1] : "");
	fflush(stdout);
	waitpid(c, NULL, 0);
	return 0;
}
PROGRAM
cat >consumer.c <<'PROGRAM'
#define _GNU_SOURCE
#include "spin.h"
#include <pthread.h>
#include <stdio.h>
SPIN(consumer_work)
static void *reader_thread(void *arg)
{
	char line[256];
	pthread_setname_np(pthread_self(), "reader");
	while (fgets(line, sizeof(line), stdin))
		;
	consumer_work(0.3);
	return arg;
}
int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, reader_thread, NULL);
	pthread_join(t, NULL);
	return 0;
}
PROGRAM
cat >sums.py <<'PROGRAM'
import json, sys
def load(path):
    with open(path) as f:
        return json.load(f)
def inclusive(node, metric):
    return node["inclusive"].get(metric, 0)
cmd = sys.argv[1]
if cmd == "programs":
    # The root's children: one entry per program, whose inclusive values add up to the total,
    # and each holds its own functions only.
    d = load(sys.argv[2]); m = d["metrics"][0]; root = d["tree"]
    kids = root["children"]
    names = sorted(k["label"] for k in kids if k["kind"] == "entry")
    print(" ".join(names))
    total = sum(inclusive(k, m) for k in kids)
    assert abs(total - inclusive(root, m)) <= 1e-9 * inclusive(root, m), (total, inclusive(root, m))
    def functions(n, out):
        if n["kind"] == "function":
            out.add(n["name"])
        for c in n.get("children", []):
            functions(c, out)
        return out
    for k in kids:
        fs = functions(k, set())
        own = {"program producer": "producer_work", "program consumer": "consumer_work"}
        for label, fn in own.items():
            if k["label"] == label:
                assert fn in fs, (label, fn, sorted(fs))
            elif fn in fs:
                raise AssertionError("%s holds %s" % (k["label"], fn))
elif cmd == "total":
    d = load(sys.argv[2]); m = d["metrics"][0]
    print("%.0f" % inclusive(d["tree"], m))
elif cmd == "program":
    d = load(sys.argv[2]); m = d["metrics"][0]
    for k in d["tree"]["children"]:
        if k["label"] == sys.argv[3]:
            print("%.0f" % inclusive(k, m))
elif cmd == "process":
    # One process: its root is its own total, every other program is zero.
    d = load(sys.argv[2]); m = d["metrics"][0]
    assert d["process"] == int(sys.argv[3]), d["process"]
    root = d["tree"]
    for k in root["children"]:
        if k["label"] != sys.argv[4]:
            assert inclusive(k, m) == 0, (k["label"], inclusive(k, m))
    print("%.0f" % inclusive(root, m))
PROGRAM

processes_setup() {
	cc -O1 -g -o producer producer.c && cc -O1 -g -pthread -o consumer consumer.c &&
	measure -e task-clock -o m sh -c "./producer first | ./consumer" 2>log && cat log &&
	prof -o db m >/dev/null 2>&1 && fathom-dump db >dump &&
	grep -q " entry program" dump
}
pid_of() { # the pid of the thread files of PROGRAM (the Nth process of it)
	sed -n "s/^  t[0-9]* $1-[^ ]* host=[^ ]* pid=\([0-9]*\) tid=.* thread=0 .*/\1/p" dump |
		sed -n "${2:-1}p"
}
