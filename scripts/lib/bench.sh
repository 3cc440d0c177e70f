# Helpers of the benchmark scripts (scripts/bench, scripts/bench-cluster).
# Source it, don't run it.

# free_port prints a loopback port nothing listens on, below Linux's
# ephemeral range (32768 and up), which the load's own connections take
# their local ports from; never one it printed before.
bench_used_ports=" "
free_port() {
	local p
	while :; do
		p=$((17000 + RANDOM % 15000))
		case $bench_used_ports in *" $p "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			bench_used_ports+="$p "
			echo "$p"
			return
		fi
	done
}

# wait_port PORT waits until something listens on the loopback port (10 s
# at most).
wait_port() {
	local _
	for _ in $(seq 200); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on port $1" >&2
	return 1
}

# join_comma ARGS... prints the arguments separated by commas.
join_comma() {
	local IFS=,
	echo "$*"
}

# raise_nofile lifts the open-files limit of this shell and what it starts
# to the hard limit (20,000 on the machines these run on). Go programs
# raise their own soft limit to it too; this is for Redis and nats-server.
raise_nofile() {
	ulimit -n "$(ulimit -Hn)"
}

# start_redis DIR PORT starts redis-server without persistence on the
# loopback port, its files in DIR, and waits until it listens; its pid is
# then in started_pid. (Not printed: a process started in a command
# substitution would not be this shell's child.)
start_redis() {
	redis-server --port "$2" --bind 127.0.0.1 --save '' --appendonly no --dir "$1" \
		--logfile "$1/redis.log" >/dev/null &
	started_pid=$!
	wait_port "$2"
}

# start_nats DIR PORT starts nats-server (no JetStream) on the loopback
# port and waits until it listens; its pid is then in started_pid.
start_nats() {
	nats-server -a 127.0.0.1 -p "$2" -l "$1/nats.log" >/dev/null &
	started_pid=$!
	wait_port "$2"
}

# start_gyre GYRE CONFIG LOG PORT starts a gyre node and waits until it
# listens on PORT; its pid is then in started_pid.
start_gyre() {
	"$1" -c "$2" 2>"$3" &
	started_pid=$!
	wait_port "$4"
}

# stop_pid PID...: ends the processes and reaps them without the shell's
# "Killed" notice.
stop_pid() {
	local p
	for p in "$@"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null || true
	done
}
