import { checkPollOp, resolveOp } from '../../core/connectors/registry';
import { formatPrivateKey, sftpConnection } from './sftpCredential';

describe("n8n's SFTP credential → connection", () => {
	it('password: host, port, username, password; no key', () => {
		expect(
			sftpConnection({
				host: ' files.example.com ',
				port: 2222,
				username: 'partner',
				password: 'pw',
			}),
		).toEqual({ host: 'files.example.com', port: 2222, username: 'partner', password: 'pw' });
	});

	it('a private key with its passphrase, a port stored as text', () => {
		const key =
			'-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nBBBB\n-----END OPENSSH PRIVATE KEY-----';
		expect(
			sftpConnection({
				host: 'h',
				port: '22',
				username: 'u',
				privateKey: key,
				passphrase: 'secret',
			}),
		).toEqual({
			host: 'h',
			port: 22,
			username: 'u',
			password: '',
			privateKey: `${key}\n`,
			passphrase: 'secret',
		});
	});

	it('refuses an empty host and a port out of range, naming the credential field', () => {
		expect(() => sftpConnection({ host: '', port: 22 })).toThrow(
			'Invalid value "" for "«sftp:host»" in the «sftp:» credential: must not be empty',
		);
		expect(() => sftpConnection({ host: 'h', port: 70000 })).toThrow(
			'Invalid value 70000 for "«sftp:port»" in the «sftp:» credential: must be a whole number from 1 to 65535',
		);
	});

	it('a key pasted on one line gets its PEM lines back; one with literal \\n too', () => {
		expect(
			formatPrivateKey(
				'-----BEGIN OPENSSH PRIVATE KEY----- AAAA BBBB -----END OPENSSH PRIVATE KEY-----',
			),
		).toBe('-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nBBBB\n-----END OPENSSH PRIVATE KEY-----\n');
		expect(
			formatPrivateKey('-----BEGIN RSA PRIVATE KEY-----\\nCCCC\\n-----END RSA PRIVATE KEY-----'),
		).toBe('-----BEGIN RSA PRIVATE KEY-----\nCCCC\n-----END RSA PRIVATE KEY-----\n');
	});
});

describe('checkPollOp', () => {
	it('refuses an op that reads a file, naming Op; accepts the listing', () => {
		expect(() => checkPollOp(resolveOp('sftp.download'))).toThrow(
			'Invalid value "sftp.download" for "«op»": reads a file',
		);
		expect(() => checkPollOp(resolveOp('sftp.list'))).not.toThrow();
	});
});
