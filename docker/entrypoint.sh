#!/bin/sh
# The container's entrypoint (/usr/local/bin/h5ark-entrypoint): h5arkd listening on all of
# the container's interfaces, /data as its data directory and, when there is one, the
# token file of the Docker secret h5ark_token or of $H5ARK_TOKEN_FILE. Arguments go to
# h5arkd after these, so they can override them.
#   h5ark-entrypoint --healthcheck    the image's HEALTHCHECK: `h5ark ping` with that token
set -eu

me=h5ark-entrypoint
data=/data
secret=/run/secrets/h5ark_token
uid=$(id -u)
gid=$(id -g)

# One rule for the daemon and the healthcheck, so that the ping carries the token the
# daemon requires: $H5ARK_TOKEN_FILE when set, else the secret when it is mounted.
token_file=${H5ARK_TOKEN_FILE:-}
if [ -z "$token_file" ] && [ -e "$secret" ]; then
    token_file=$secret
fi

owner() {
    stat -c 'owner uid %u, gid %g, mode %A' "$1" 2>/dev/null || echo "no owner to be read"
}

if [ "${1:-}" = "--healthcheck" ]; then
    # h5ark reads $H5ARK_TOKEN_FILE itself, and $H5ARK_ENDPOINT when the daemon was moved
    # off port 5555.
    if [ -n "$token_file" ]; then
        export H5ARK_TOKEN_FILE="$token_file"
    fi
    exec h5ark --connect-timeout 5 --timeout 5 ping
fi

for arg in "$@"; do
    case "$arg" in
    --help | -h | --version | --curve-keygen*) exec h5arkd "$@" ;;
    esac
done

# A host folder bind-mounted on /data keeps its owner, often another uid than the
# image's: say so and what to do, rather than start and fail at the first save.
if [ ! -w "$data" ] && [ "${H5ARK_READ_ONLY_DATA:-0}" != 1 ]; then
    cat >&2 <<EOF
$me: the data directory $data is not writable by this container's user (uid $uid, gid $gid);
  it has $(owner "$data").
  For a host folder mounted there, run the container as the folder's owner:
      docker run --user "\$(id -u):\$(id -g)" -v "\$PWD/data:/data" ...
      H5ARK_UID=\$(id -u) H5ARK_GID=\$(id -g) docker compose -f docker/compose.yaml up
  or give the folder to the image's user, uid 10001:  sudo chown -R 10001:10001 data
  To serve a folder read-only (no save), set H5ARK_READ_ONLY_DATA=1.
EOF
    exit 1
fi

token_given=0
for arg in "$@"; do
    case "$arg" in
    --token-file | --token-file=*) token_given=1 ;;
    esac
done
if [ "$token_given" = 0 ] && [ -n "$token_file" ]; then
    if [ ! -r "$token_file" ]; then
        cat >&2 <<EOF
$me: cannot read the token file $token_file as uid $uid, gid $gid;
  it has $(owner "$token_file").
  A secret from a host file keeps the file's owner and mode: run the container as the
  file's owner (--user, or H5ARK_UID and H5ARK_GID with compose), or let gid $gid read it.
EOF
        exit 1
    fi
    set -- --token-file "$token_file" "$@"
elif [ "$token_given" = 0 ]; then
    echo "$me: no token (no secret h5ark_token, no \$H5ARK_TOKEN_FILE): any client that" \
        "reaches port 5555 may use the daemon; publish it on the host's loopback only" \
        "(-p 127.0.0.1:5555:5555) or give a token" >&2
fi

exec h5arkd --endpoint tcp://0.0.0.0:5555 --data-dir "$data" "$@"
