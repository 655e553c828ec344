// A real OAuth2 authorization server on loopback for the e2e tests: oauth2-mock-server (ESM only,
// hence a child process of its own; test/harness/oauth2.ts drives it). It signs RS256 JWTs and serves
// their keys at /jwks. Commands arrive on stdin as JSON lines, events leave on stdout as JSON lines.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';

import { OAuth2Server } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
await server.start(0, '127.0.0.1');

let lifetimeSec = 3600;
const revoked = new Set();
/** Clients whose refresh tokens are no longer honoured (the user withdrew the grant). */
const grantsRevoked = new Set();
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

function clientIdOf(req) {
	const header = req.headers.authorization ?? '';
	if (header.startsWith('Basic '))
		return Buffer.from(header.slice(6), 'base64').toString('utf8').split(':')[0];
	return req.body?.client_id;
}

server.service.on('beforeTokenSigning', (token) => {
	const now = Math.floor(Date.now() / 1000);
	token.payload.iat = now;
	token.payload.exp = now + lifetimeSec;
	// Without an id of its own, two tokens issued in the same second for one client would be identical.
	token.payload.jti = randomUUID();
});

server.service.on('beforeResponse', (response, req) => {
	const clientId = decodeURIComponent(clientIdOf(req) ?? '');
	const grant = req.body?.grant_type;
	if (grant === 'refresh_token' && grantsRevoked.has(clientId)) {
		response.statusCode = 400;
		response.body = { error: 'invalid_grant', error_description: 'the refresh token was revoked' };
	} else if (revoked.has(clientId)) {
		response.statusCode = 401;
		response.body = { error: 'invalid_client', error_description: `client ${clientId} is revoked` };
	} else if (
		response.body &&
		typeof response.body === 'object' &&
		'access_token' in response.body
	) {
		response.body.expires_in = lifetimeSec;
	}
	send({
		event: 'token',
		clientId,
		grant,
		status: response.statusCode ?? 200,
		accessToken: response.body?.access_token,
	});
});

createInterface({ input: process.stdin }).on('line', (line) => {
	const command = JSON.parse(line);
	if (command.cmd === 'lifetime') lifetimeSec = command.seconds;
	if (command.cmd === 'revoke') revoked.add(command.clientId);
	if (command.cmd === 'revokeGrant') grantsRevoked.add(command.clientId);
	send({ ack: command.id });
});
process.stdin.on('end', () => void server.stop().then(() => process.exit(0)));

send({ ready: server.issuer.url });
