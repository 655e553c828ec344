import { type INode, NodeOperationError } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import { ConnectorError } from '../../core/connectors/types';
import { inEditorWords, toNodeError } from './errors';

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
