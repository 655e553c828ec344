import type { INode, INodeCredentialDescription, INodeProperties, INodePropertyOptions, NodeParameterValue } from 'n8n-workflow';

import { GENERIC_AUTH_TYPES, type GenericAuthType, LEGACY_HTTP_CREDENTIAL, resolveHttpAuth } from '../../core/connectors/httpAuth';
import { allOps } from '../../core/connectors/registry';
import type { TimeUnit } from '../../core/units';
import type { HttpAuthSettings } from './httpTransport';

const UNIT_NAMES: Record<TimeUnit, string> = { seconds: 'Seconds', minutes: 'Minutes', hours: 'Hours', days: 'Days' };

/** The options of a duration-unit parameter, in the order given. */
export function timeUnitOptions(...units: TimeUnit[]): INodePropertyOptions[] {
	return units.map((unit) => ({ name: UNIT_NAMES[unit], value: unit }));
}

const IMAP_OPS = allOps()
	.filter((op) => op.transport === 'imap')
	.map((op) => op.name);

/**
 * Version 1.1 of the Poll Trigger and the Connector authenticates HTTP ops with n8n's generic
 * credential types and IMAP ops with n8n's IMAP credential; version 1 (workflows saved before)
 * keeps this package's own credentials, so those workflows run as they did.
 */
export const CONNECTOR_CREDENTIALS_VERSION = 1.1;

const V1 = { '@version': [1] };
const V1_1 = { '@version': [CONNECTOR_CREDENTIALS_VERSION] };

/** n8n's generic types, each shown once chosen as the "Generic Auth Type". */
export function genericCredentials(show: Record<string, NodeParameterValue[]>, hide?: Record<string, NodeParameterValue[]>): INodeCredentialDescription[] {
	return (Object.keys(GENERIC_AUTH_TYPES) as GenericAuthType[]).map((type) => ({
		name: type,
		required: true,
		displayOptions: { show: { ...show, authentication: ['genericCredentialType'], genericAuthType: [type] }, ...(hide && { hide }) },
	}));
}

/**
 * The credentials a connector op may need; each shown only for the ops that use it.
 *
 * The HTTP ones are keyed on the op with `hide`, not `show`: when `show` conditions of a node's credentials cover
 * every value of an options parameter, n8n's editor takes that parameter for the node's "authentication"
 * field, removes it from the parameter list and offers it only as the credential's type (getMainAuthField),
 * so the Op dropdown vanished from the panel (caught by test/e2e/editor.test.ts). For the same reason
 * "Authentication" has a None option: the editor never takes a field with a `none` value for that.
 */
export const connectorCredentials: INodeCredentialDescription[] = [
	{ name: LEGACY_HTTP_CREDENTIAL, required: false, displayOptions: { show: V1, hide: { op: IMAP_OPS } } },
	{ name: 'durableImapApi', required: true, testedBy: 'imapCredentialTest', displayOptions: { show: { ...V1, op: IMAP_OPS } } },
	...genericCredentials(V1_1, { op: IMAP_OPS }),
	{ name: 'imap', required: true, testedBy: 'imapCredentialTest', displayOptions: { show: { ...V1_1, op: IMAP_OPS } } },
];

/** "Authentication" and "Generic Auth Type", as n8n's HTTP Request node offers them. */
export function httpAuthProperties(show: Record<string, NodeParameterValue[]>, hide?: Record<string, NodeParameterValue[]>, extraOptions: INodePropertyOptions[] = []): INodeProperties[] {
	const where = (more: Record<string, NodeParameterValue[]> = {}) => ({ show: { ...show, ...more }, ...(hide && { hide }) });
	return [
		{
			displayName: 'Authentication',
			name: 'authentication',
			type: 'options',
			noDataExpression: true,
			default: 'none',
			displayOptions: where(),
			options: [
				{ name: 'None', value: 'none' },
				{
					name: 'Generic Credential Type',
					value: 'genericCredentialType',
					description: `One of n8n's own credential types: ${Object.values(GENERIC_AUTH_TYPES).join(', ')}`,
				},
				...extraOptions,
			],
		},
		{
			displayName: 'Generic Auth Type',
			name: 'genericAuthType',
			type: 'credentialsSelect',
			noDataExpression: true,
			required: true,
			default: '',
			credentialTypes: ['has:genericAuth'],
			displayOptions: where({ authentication: ['genericCredentialType'] }),
			description: `Supported: ${Object.values(GENERIC_AUTH_TYPES).join(', ')}. OAuth2 tokens are refreshed by n8n when the API answers 401.`,
		},
	];
}

/** `op` and `with`, the same in the Poll Trigger and the Connector node. */
export function connectorProperties(withDescription: string): INodeProperties[] {
	return [
		{
			displayName: 'Op',
			name: 'op',
			type: 'options',
			noDataExpression: true,
			default: 'http.request',
			options: allOps().map((op) => ({ name: op.name, value: op.name, description: op.description })),
			description: 'The connector operation to call',
		},
		...httpAuthProperties(V1_1, { op: IMAP_OPS }),
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			placeholder: 'https://inventory.example.com/api',
			displayOptions: { show: V1_1, hide: { op: IMAP_OPS } },
			description: 'A relative request URL in With is resolved against this. Leave empty when With gives an absolute URL.',
		},
		{
			displayName: 'With',
			name: 'with',
			type: 'json',
			default: '{\n  "method": "GET",\n  "url": "/items"\n}',
			description: withDescription,
		},
	];
}

/** How a Poll Trigger or Connector node's HTTP op authenticates, from its version and parameters. */
export function connectorHttpAuth(node: INode, parameter: (name: string, fallback: unknown) => unknown): HttpAuthSettings {
	if (node.typeVersion < CONNECTOR_CREDENTIALS_VERSION) {
		return { auth: LEGACY_HTTP_CREDENTIAL in (node.credentials ?? {}) ? { kind: 'legacy', required: false } : { kind: 'none' } };
	}
	const authentication = parameter('authentication', 'none');
	return {
		auth: resolveHttpAuth(authentication, authentication === 'genericCredentialType' ? parameter('genericAuthType', '') : undefined),
		baseUrl: String(parameter('baseUrl', '') ?? ''),
	};
}
