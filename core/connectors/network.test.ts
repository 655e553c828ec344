import { endpointOf, inOp, networkFailure, unreachable } from './network';
import { ConnectorError } from './types';
import { ConfigError } from '../configError';

/** What n8n-workflow's NodeError replaces with stock text when a message holds it (any case). */
const N8N_REWRITTEN =
	/ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|ERRADDRINUSE|EADDRNOTAVAIL|ECONNABORTED|EHOSTUNREACH|EAI_AGAIN|ENOENT|EISDIR|ENOTDIR|EACCES|EEXIST|EPERM|GETADDRINFO/i;

const socketError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('networkFailure', () => {
	it.each([
		['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1', /^connection refused/],
		['ENOTFOUND', 'getaddrinfo ENOTFOUND nonexistent.invalid', /^host name does not resolve$/],
		['EAI_AGAIN', 'getaddrinfo EAI_AGAIN example.com', /^host name lookup did not answer/],
		['ETIMEDOUT', 'connect ETIMEDOUT 10.0.0.1:22', /^timed out$/],
		['ECONNRESET', 'read ECONNRESET', /^connection reset by the server$/],
		['EHOSTUNREACH', 'connect EHOSTUNREACH 10.0.0.1:22', /^host unreachable$/],
	])('says %s in words without the code', (code, message, words) => {
		const failure = networkFailure(socketError(code, message));
		expect(failure?.words).toMatch(words);
		expect(failure?.words).not.toMatch(N8N_REWRITTEN);
		expect(failure?.raw).toBe(message);
	});

	it("finds the socket's error inside n8n's wrapper (cause) and a name's several addresses (errors)", () => {
		const wrapped = Object.assign(new Error('The service refused the connection'), {
			cause: socketError('ECONNREFUSED', 'connect ECONNREFUSED ::1:1'),
		});
		expect(networkFailure(wrapped)?.words).toMatch(/^connection refused/);
		const several = Object.assign(new Error(''), {
			errors: [socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1')],
		});
		expect(networkFailure(several)?.raw).toBe('connect ECONNREFUSED 127.0.0.1:1');
	});

	it("tells axios's timeout from an abort, and is undefined for any other failure", () => {
		expect(networkFailure(socketError('ECONNABORTED', 'timeout of 5000ms exceeded'))?.words).toBe(
			'timed out',
		);
		expect(networkFailure(socketError('ECONNABORTED', 'aborted'))?.words).toBe(
			'connection aborted',
		);
		expect(networkFailure(new Error('530 Login incorrect.'))).toBeUndefined();
		expect(networkFailure(socketError('ENOENT', 'no such file'))).toBeUndefined();
		expect(networkFailure('a string')).toBeUndefined();
	});
});

describe('unreachable', () => {
	it('names what failed, host and port, with the socket message as the description', () => {
		const error = unreachable(
			'IMAP connection',
			'mail.example.com:993',
			socketError('ENOTFOUND', 'getaddrinfo ENOTFOUND mail.example.com'),
		);
		expect(error).toBeInstanceOf(ConnectorError);
		expect(error?.message).toBe(
			'IMAP connection at mail.example.com:993 failed: host name does not resolve',
		);
		expect(error?.message).not.toMatch(N8N_REWRITTEN);
		expect(error?.details).toEqual({
			description: 'getaddrinfo ENOTFOUND mail.example.com',
			unreachable: { at: 'mail.example.com:993', words: 'host name does not resolve' },
		});
		expect(unreachable('IMAP connection', 'h:1', new Error('NO [AUTHENTICATIONFAILED]'))).toBe(
			undefined,
		);
	});
});

describe('endpointOf', () => {
	it("gives the host, the port (the scheme's when unnamed) and the path", () => {
		expect(endpointOf('http://127.0.0.1:8080/a/b?c=1')).toEqual({
			host: '127.0.0.1',
			port: 8080,
			path: '/a/b',
		});
		expect(endpointOf('https://api.example.com/x')).toMatchObject({ port: 443 });
		expect(endpointOf('http://[::1]/x')).toMatchObject({ host: '::1', port: 80 });
		expect(endpointOf('/relative')).toBeUndefined();
	});
});

describe('inOp', () => {
	it("puts the op's name before a ConnectorError's message, once, keeping its details", () => {
		const named = inOp('sftp.list', new ConnectorError('SFTP error', { status: 4 }));
		expect(named).toBeInstanceOf(ConnectorError);
		expect((named as ConnectorError).message).toBe('sftp.list: SFTP error');
		expect((named as ConnectorError).details).toEqual({ status: 4 });
		expect((inOp('sftp.list', named) as Error).message).toBe('sftp.list: SFTP error');
	});

	it('leaves a ConfigError (it names its field) and any other error as they are', () => {
		const config = new ConfigError('with', 1, 'must be an object');
		expect(inOp('sftp.list', config)).toBe(config);
		const other = new Error('boom');
		expect(inOp('sftp.list', other)).toBe(other);
	});
});
