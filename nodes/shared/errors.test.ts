import { type INode, NodeOperationError } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import { ConnectorError } from '../../core/connectors/types';
import { DEAD_LETTER_PREFIX } from '../../core/poll';
import { deadLetterError } from '../PollTrigger/runFailures';
import { inEditorWords, nodeError, toNodeError } from './errors';

const NODE: INode = {
	id: 'node-1',
	name: 'Poll',
	type: 'n8n-nodes-durable-triggers.pollTrigger',
	typeVersion: 1.1,
	position: [0, 0],
	parameters: {},
};

describe('toNodeError', () => {
	it('points a ConfigError at its parameter as the editor labels it', () => {
		const error = toNodeError(
			NODE,
			new ConfigError('interval', 2_000, 'must be from 5s to 7d', { duration: true }),
		);
		expect(error).toBeInstanceOf(NodeOperationError);
		expect(error.message).toBe('Invalid value 2s for "Interval": must be from 5s to 7d');
		expect(error.description).toBe('Check the "Interval" parameter.');
	});

	it('points a ConfigError of a credential at the credential field', () => {
		const error = toNodeError(
			NODE,
			new ConfigError('host', '', 'must not be empty', { credential: 'imap' }),
			2,
		);
		expect(error.message).toBe(
			'Invalid value "" for "Host" in the IMAP credential: must not be empty',
		);
		expect(error.description).toBe('Check the "Host" field of the IMAP credential.');
		expect(error.context.itemIndex).toBe(2);
	});

	it("keeps other errors' messages and the details they carry", () => {
		const error = toNodeError(
			NODE,
			new ConnectorError('GET /x answered HTTP 500', { description: '<html>' }),
		);
		expect(error.message).toBe('GET /x answered HTTP 500');
		expect(error.description).toBe('<html>');
		expect(toNodeError(NODE, 'text').message).toBe('text');
		const nodeError = new NodeOperationError(NODE, 'as is');
		expect(toNodeError(NODE, nodeError)).toBe(nodeError);
	});
});

describe('nodeError', () => {
	// n8n-workflow's NodeError turns any message holding a socket code into stock text without host
	// or port (issue 47); a server's or a run's text can hold one (a dead letter's last error).
	it("keeps the package's message word for word where n8n would put its stock text", () => {
		const message =
			'Dead letter: its run of item "a" failed (key k); last error: connect ECONNREFUSED 10.0.0.5:5432';
		expect(new NodeOperationError(NODE, message).message).toBe(
			'The service refused the connection - perhaps it is offline',
		);
		const error = nodeError(NODE, message, { description: 'Start Again takes it back.' });
		expect(error).toBeInstanceOf(NodeOperationError);
		expect(error.message).toBe(message);
		expect(error.description).toBe('Start Again takes it back.');
	});

	it("keeps a dead letter's marker when its last error holds a socket code (the error workflow's test)", () => {
		const error = deadLetterError(NODE, {
			key: 'poll:w:n:a',
			keys: ['a'],
			attempts: 3,
			lastError: 'getaddrinfo ENOTFOUND partner.example.com',
			at: 0,
		});
		expect(error.message).toBe(
			`${DEAD_LETTER_PREFIX}all 3 runs of item "a" failed (key poll:w:n:a); last error: getaddrinfo ENOTFOUND partner.example.com`,
		);
	});

	it("keeps a core error's words through toNodeError, with its cause and item", () => {
		const cause = new ConnectorError('sql.query: PostgreSQL error: getaddrinfo ENOTFOUND db');
		const error = toNodeError(NODE, cause, 3);
		expect(error.message).toBe('sql.query: PostgreSQL error: getaddrinfo ENOTFOUND db');
		expect(error.cause).toBe(cause);
		expect(error.context.itemIndex).toBe(3);
	});
});

describe('inEditorWords', () => {
	it("says the fields a text names as the node's editor labels them, in collections too", () => {
		expect(
			inEditorWords(
				'keep at most 5 ("«maxRemembered»"); "«pagination.nextUrl»" gave no URL; set "«with»"',
				NODE,
			),
		).toBe('keep at most 5 ("Remember at Most (Keys)"); "Next URL" gave no URL; set "With"');
	});

	it("says a credential's fields and the credential type's name, and leaves an unknown id as it is", () => {
		expect(
			inEditorWords(
				'"«roundTripCallbackApi:toleranceSec»" in the «roundTripCallbackApi:» credential; «postgres:sshTunnel»; «httpBasicAuth:», «durableHttpApi:»; «backoff.factor»',
				NODE,
			),
		).toBe(
			'"Tolerance (Seconds)" in the Round-Trip Callback API credential; SSH Tunnel; Basic Auth, Durable Triggers HTTP API; backoff.factor',
		);
	});

	it('finds the node by its type, also as an AI tool', () => {
		const connectorTool = { ...NODE, type: 'n8n-nodes-durable-triggers.connectorTool' };
		expect(inEditorWords('«op»', connectorTool)).toBe('Op');
		expect(
			inEditorWords('«interval»', {
				...NODE,
				type: 'n8n-nodes-durable-triggers.durableScheduleTrigger',
			}),
		).toBe('Interval');
		expect(
			inEditorWords('«timeoutAmount»', {
				...NODE,
				type: 'n8n-nodes-durable-triggers.roundTripWait',
			}),
		).toBe('Timeout');
	});
});
