import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { FtpConnection } from '../../core/connectors/types';
import { freePort } from './net';
import { ensureUser, greets, serverDir, UserFilesServer } from './userFilesServer';

export const VSFTPD = '/usr/sbin/vsftpd';
/** How many passive data ports the server has: a few polls and a Connector step at a time. */
const PASSIVE_PORTS = 10;

/**
 * A real vsftpd for tests (docs/design/s3-ftp.md §3): its own config, self-signed certificate, log
 * and a user of its own, in a temp dir, on a loopback port with a passive range of its own. Plain
 * FTP and explicit FTPS (AUTH TLS). The user (made with useradd, so the harness must run as root, as
 * CI does) is chrooted to its home, the `files` folder, which the tests fill directly on disk: an FTP
 * path `/in/a.csv` is `path('in/a.csv')` on disk.
 */
export class Vsftpd extends UserFilesServer {
	/**
	 * Starts a server for `user` on `port` (default: a free one) with `password`. `ownProcessGroup`:
	 * in a process group of its own (npm start's demo server), so a Ctrl-C in the terminal reaches
	 * only its owner, which stops it.
	 */
	static async start({
		// One system user per test process: lanes side by side must not move each other's home.
		user = `ftptest${process.pid}`,
		password = 'ftp-test-password',
		port,
		ownProcessGroup = false,
	}: {
		user?: string;
		password?: string;
		port?: number;
		ownProcessGroup?: boolean;
	} = {}): Promise<Vsftpd> {
		const dir = serverDir(VSFTPD, 'vsftpd', 'vsftpd');
		const passive = await freePort(PASSIVE_PORTS);
		port ??= await freePort();
		// Bash: Debian's PAM service for vsftpd (pam_shells) refuses a user whose shell is not in /etc/shells.
		const owner = ensureUser(user, join(dir, 'files'), password, '/bin/bash');
		execFileSync(
			'openssl',
			[
				...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2'],
				...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
				...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
			],
			{ stdio: 'ignore' },
		);
		// vsftpd's chroot needs an empty folder root owns.
		mkdirSync('/var/run/vsftpd/empty', { recursive: true });
		const config = join(dir, 'vsftpd.conf');
		writeFileSync(
			config,
			[
				'listen=YES',
				'listen_ipv6=NO',
				'listen_address=127.0.0.1',
				`listen_port=${port}`,
				'background=NO',
				'anonymous_enable=NO',
				'local_enable=YES',
				'write_enable=YES',
				'local_umask=022',
				'chroot_local_user=YES',
				'allow_writeable_chroot=YES',
				'pasv_enable=YES',
				'pasv_address=127.0.0.1',
				`pasv_min_port=${passive}`,
				`pasv_max_port=${passive + PASSIVE_PORTS - 1}`,
				'port_enable=NO',
				'ssl_enable=YES',
				'allow_anon_ssl=NO',
				'force_local_logins_ssl=NO',
				'force_local_data_ssl=NO',
				`rsa_cert_file=${join(dir, 'cert.pem')}`,
				`rsa_private_key_file=${join(dir, 'key.pem')}`,
				'require_ssl_reuse=YES',
				'ssl_ciphers=HIGH',
				'seccomp_sandbox=NO',
				'secure_chroot_dir=/var/run/vsftpd/empty',
				'pam_service_name=vsftpd',
				// LIST times in UTC, as the ops read them.
				'use_localtime=NO',
				// Many short sessions in a burst: no limit per address.
				'max_per_ip=0',
				'max_clients=0',
				'xferlog_enable=YES',
				'log_ftp_protocol=YES',
				`vsftpd_log_file=${join(dir, 'vsftpd.log')}`,
				'syslog_enable=NO',
				'',
			].join('\n'),
		);
		// In the foreground (background=NO), so the harness owns the process.
		const child = spawn(VSFTPD, [config], {
			stdio: ['ignore', 'pipe', 'pipe'],
			detached: ownProcessGroup,
		});
		const vsftpd = new Vsftpd(child, dir, 'vsftpd.log', port, user, password, owner);
		await vsftpd.ready(
			`vsftpd's greeting on port ${port}`,
			() => greets(port, '220'),
			() => vsftpd.log(),
		);
		return vsftpd;
	}

	connection(): FtpConnection {
		return { host: this.host, port: this.port, username: this.user, password: this.password };
	}

	/** The fields of an n8n `ftp` credential for the user. */
	credential(): Record<string, unknown> {
		return { ...this.connection() };
	}

	/** How many times the user has logged in: each FTP op call (a poll, a move) is one login. */
	logins(): number {
		return this.count(/\[\S+\] OK LOGIN: Client "/);
	}

	/** How many folder listings the server has sent: a poll lists after it logged in. */
	listings(): number {
		return this.count(/FTP response: Client "[^"]+", "226 Directory send OK\."/);
	}
}
