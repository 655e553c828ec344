#!/usr/bin/env bash
# vsftpd in the foreground on loopback for the issue 40 probes: a local user chrooted to its home,
# passive ports on loopback, plain FTP and explicit FTPS (AUTH TLS) with a self-signed certificate.
# Root, Debian: apt-get install -y vsftpd. Usage: bash vsftpd.sh [dir=/tmp/ftpprobe] [port=2121]
# (stop it with Ctrl-C or kill its pid; ftp.mjs then runs against it).
set -euo pipefail
dir=${1:-/tmp/ftpprobe}
port=${2:-2121}
mkdir -p "$dir/home" /var/run/vsftpd/empty
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
if id ftpdrop >/dev/null 2>&1; then usermod -d "$dir/home" ftpdrop; else useradd -d "$dir/home" -s /bin/bash ftpdrop; fi
chown ftpdrop: "$dir/home"
echo 'ftpdrop:drop-password' | chpasswd
cat >"$dir/vsftpd.conf" <<EOF
listen=YES
listen_ipv6=NO
listen_address=127.0.0.1
listen_port=$port
background=NO
anonymous_enable=NO
local_enable=YES
write_enable=YES
local_umask=022
chroot_local_user=YES
allow_writeable_chroot=YES
pasv_enable=YES
pasv_address=127.0.0.1
pasv_min_port=$((port + 27879))
pasv_max_port=$((port + 27888))
port_enable=NO
ssl_enable=YES
allow_anon_ssl=NO
force_local_logins_ssl=NO
force_local_data_ssl=NO
rsa_cert_file=$dir/cert.pem
rsa_private_key_file=$dir/key.pem
require_ssl_reuse=YES
ssl_ciphers=HIGH
seccomp_sandbox=NO
secure_chroot_dir=/var/run/vsftpd/empty
pam_service_name=vsftpd
use_localtime=NO
xferlog_enable=YES
log_ftp_protocol=YES
vsftpd_log_file=$dir/vsftpd.log
syslog_enable=NO
EOF
exec /usr/sbin/vsftpd "$dir/vsftpd.conf"
