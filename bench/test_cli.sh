#!/bin/sh
# cgr-bench's command line, without running a suite: every case either stops
# at the command line (64, or 0 for --help) or gets past it and stops at a
# device that does not exist (2), which no machine has, so the test needs no
# GPU and never measures anything.
#   test_cli.sh PATH_TO_CGR_BENCH
bench=$1
failed=0
expect() {
    want=$1
    shift
    "$bench" "$@" >/dev/null 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAILED: cgr-bench $*: exit $got, expected $want"
        failed=1
    fi
}
expect 0 --help
expect 64 --no-such-option
expect 64 no-such-suite
expect 64 --steps 100 --device 1023
expect 64 --steps abc --device 1023
expect 2 chain --device 1023
# --quick means 200 steps, too few for 30 rounds of at least 10 ...
expect 64 chain --quick --rounds 30 --device 1023
# ... unless --steps gives more, in either order.
expect 2 chain --quick --steps 300 --rounds 30 --device 1023
expect 2 chain --steps=300 --quick --rounds 30 --device 1023
expect 64 chain --rounds 30 --steps 250 --device 1023
# --trace only where a suite profiles steps; elsewhere nothing would be written.
expect 64 chain --trace t.json --device 1023
expect 64 newshape --trace t.json --device 1023
expect 2 serve --trace t.json --device 1023
expect 2 --trace=t.json --device 1023
[ $failed = 0 ] && echo "PASS: cgr-bench command line"
exit $failed
