# Steps of a long script, each with a heartbeat, for scripts/test. Source
# it, don't run it:
#
#   . scripts/lib/step.sh
#   step "go vet"                      # ends the step before, starts this one
#   go vet ./...
#   step -p count_passed "go test"     # count_passed adds to each heartbeat
#   ...
#   end_step
#
# While a step runs, a line "-- still running: <step>, <N>s" comes every
# HEARTBEAT_SECONDS (30 by default), so that a step whose commands print
# nothing for minutes (go test while a long package runs, npm ci, apt-get)
# is not mistaken for a hung one. Nothing else changes: the commands run in
# the foreground, their output goes where it went, and under set -e a
# failing one ends the script with its status. The heartbeat ends with its
# step, and with the script however it ends (failure, ctrl-C, SIGTERM).

HEARTBEAT_SECONDS=${HEARTBEAT_SECONDS:-30}

step_name="" step_start=$SECONDS heartbeat_pid=""
step_remove=()
step_at_exit=()

# step [-p PROGRESS_FUNCTION] NAME...: ends the running step with how long
# it took and starts the named one, so that a long run shows where it is
# and where the time went. PROGRESS_FUNCTION, when given, prints a few
# words that each heartbeat of the step adds (it runs in the heartbeat's
# subshell: it sees the variables set before step).
step() {
	local progress=""
	if [ "${1:-}" = "-p" ]; then
		progress=$2
		shift 2
	fi
	end_step
	step_name="$*" step_start=$SECONDS
	printf '\n== %s (%s)\n' "$*" "$(date +%H:%M:%S)"
	heartbeat_start "$step_name" "$progress"
}

end_step() {
	heartbeat_stop
	if [ -n "$step_name" ]; then
		printf '== done in %ss: %s\n' "$((SECONDS - step_start))" "$step_name"
		step_name=""
	fi
}

# heartbeat_start NAME [PROGRESS_FUNCTION] prints the heartbeat of NAME
# from a background subshell until heartbeat_stop.
heartbeat_start() {
	heartbeat_stop
	local name=$1 progress=${2:-} parent=$$
	(
		# The sleep is killed with the subshell: left behind, it would
		# hold the script's output open (a pipe into tee) until it ends.
		nap=""
		trap '[ -n "$nap" ] && kill "$nap" 2>/dev/null; exit 0' TERM
		elapsed=0
		while :; do
			sleep "$HEARTBEAT_SECONDS" </dev/null >/dev/null 2>&1 &
			nap=$!
			wait "$nap" || true
			# The script is gone (SIGKILL runs no trap): so is its step.
			kill -0 "$parent" 2>/dev/null || exit 0
			elapsed=$((elapsed + HEARTBEAT_SECONDS))
			if [ -n "$progress" ]; then
				printf -- '-- still running: %s, %ss: %s\n' "$name" "$elapsed" "$("$progress")"
			else
				printf -- '-- still running: %s, %ss\n' "$name" "$elapsed"
			fi
		done
	) &
	heartbeat_pid=$!
}

heartbeat_stop() {
	if [ -n "$heartbeat_pid" ]; then
		kill "$heartbeat_pid" 2>/dev/null || true
		wait "$heartbeat_pid" 2>/dev/null || true
		heartbeat_pid=""
	fi
}

# remove_at_exit FILE...: removes the files when the script ends.
remove_at_exit() {
	step_remove+=("$@")
}

# run_at_exit COMMAND: runs the command (a string, through eval) when the
# script ends, after the heartbeat stops: to stop a server the script
# started for its whole run.
run_at_exit() {
	step_at_exit+=("$1")
}

step_exit() {
	heartbeat_stop
	local cmd
	for cmd in "${step_at_exit[@]}"; do
		eval "$cmd" || true
	done
	if ((${#step_remove[@]})); then
		rm -f "${step_remove[@]}"
	fi
}

trap step_exit EXIT
# On ctrl-C or SIGTERM, exit, which runs the EXIT trap, with the status a
# shell killed by the signal would have.
trap 'exit 130' INT
trap 'exit 143' TERM
