import { ftpConnection } from './ftpCredential';

describe("n8n's FTP credential → connection", () => {
	it('host, port (21 unless set, text counts), username, password', () => {
		expect(
			ftpConnection({ host: ' files.example.com ', username: 'partner', password: 'pw' }),
		).toEqual({ host: 'files.example.com', port: 21, username: 'partner', password: 'pw' });
		expect(ftpConnection({ host: 'h', port: '2121' })).toEqual({
			host: 'h',
			port: 2121,
			username: '',
			password: '',
		});
	});

	it('refuses an empty host, naming the credential field', () => {
		expect(() => ftpConnection({ host: '', port: 21 })).toThrow(
			'Invalid value "" for "«ftp:host»" in the «ftp:» credential: must not be empty',
		);
	});
});
