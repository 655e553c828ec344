import type {
	INode,
	INodeCredentialDescription,
	INodeProperties,
	INodePropertyOptions,
	NodeParameterValue,
} from 'n8n-workflow';

import {
	GENERIC_AUTH_TYPES,
	type GenericAuthType,
	type HttpAuthSettings,
	LEGACY_HTTP_CREDENTIAL,
	resolveHttpAuth,
} from '../../core/connectors/httpAuth';
import { allOps } from '../../core/connectors/registry';
import type { TimeUnit } from '../../core/units';

/** n8n's generic credential types (core/connectors/httpAuth.ts) by the names n8n's editor shows. */
export const GENERIC_AUTH_NAMES: Record<GenericAuthType, string> = {
	httpBasicAuth: 'Basic Auth',
	httpBearerAuth: 'Bearer Auth',
	httpCustomAuth: 'Custom Auth',
	httpHeaderAuth: 'Header Auth',
	httpQueryAuth: 'Query Auth',
	oAuth2Api: 'OAuth2 API',
};

const UNIT_NAMES: Record<TimeUnit, string> = {
	seconds: 'Seconds',
	minutes: 'Minutes',
	hours: 'Hours',
	days: 'Days',
};

/** The options of a duration-unit parameter, in the order given. */
export function timeUnitOptions(...units: TimeUnit[]): INodePropertyOptions[] {
	return units.map((unit) => ({ name: UNIT_NAMES[unit], value: unit }));
}

const opsOf = (transport: string) =>
	allOps()
		.filter((op) => op.transport === transport)
		.map((op) => op.name);
const IMAP_OPS = opsOf('imap');
const SFTP_OPS = opsOf('sftp');
const FTP_OPS = opsOf('ftp');
const SQL_OPS = opsOf('sql');
const S3_OPS = opsOf('s3');
/** The ops that take no HTTP settings: HTTP credentials, Authentication and Base URL are hidden for them. */
const NOT_HTTP_OPS = allOps()
	.filter((op) => op.transport !== 'http')
	.map((op) => op.name);

/**
 * Version 1.1 of the Poll Trigger and the Connector authenticates HTTP ops with n8n's generic
 * credential types and IMAP ops with n8n's IMAP credential; version 1 (workflows saved before)
 * keeps this package's own credentials, so those workflows run as they did.
 */
export const CONNECTOR_CREDENTIALS_VERSION = 1.1;

const V1 = { '@version': [1] };
const V1_1 = { '@version': [CONNECTOR_CREDENTIALS_VERSION] };

/** n8n's generic types, each shown once chosen as the "Authentication". */
export function genericCredentials(
	show: Record<string, NodeParameterValue[]>,
	hide?: Record<string, NodeParameterValue[]>,
): INodeCredentialDescription[] {
	return GENERIC_AUTH_TYPES.map((type) => ({
		name: type,
		required: true,
		displayOptions: { show: { ...show, authentication: [type] }, ...(hide && { hide }) },
	}));
}

/**
 * The credentials a connector op may need; each shown only for the ops that use it.
 *
 * The HTTP ones are keyed on the op with `hide`, not `show`: when `show` conditions of a node's credentials cover
 * every value of an options parameter, n8n's editor takes that parameter for the node's "authentication"
 * field, removes it from the parameter list and offers it only as the credential's type (getMainAuthField),
 * so the Op dropdown vanished from the panel (caught by test/e2e/editor.test.ts). For the same reason
 * "Authentication" has a None option, which no credential covers: the editor then leaves it in the panel.
 */
export const connectorCredentials: INodeCredentialDescription[] = [
	{
		name: LEGACY_HTTP_CREDENTIAL,
		required: false,
		displayOptions: { show: V1, hide: { op: NOT_HTTP_OPS } },
	},
	{
		name: 'durableImapApi',
		required: true,
		testedBy: 'imapCredentialTest',
		displayOptions: { show: { ...V1, op: IMAP_OPS } },
	},
	...genericCredentials(V1_1, { op: NOT_HTTP_OPS }),
	{
		name: 'imap',
		required: true,
		testedBy: 'imapCredentialTest',
		displayOptions: { show: { ...V1_1, op: IMAP_OPS } },
	},
	// n8n's SFTP credential, found by its name among n8n's own credential types, in every version.
	{
		name: 'sftp',
		required: true,
		testedBy: 'sftpCredentialTest',
		displayOptions: { show: { op: SFTP_OPS } },
	},
	// n8n's FTP credential (its FTP node's), likewise; TLS is set in With, as the credential has no field for it.
	{
		name: 'ftp',
		required: true,
		testedBy: 'ftpCredentialTest',
		displayOptions: { show: { op: FTP_OPS } },
	},
	// n8n's own database credentials (its Postgres and MySQL nodes'), in every version. MySQL's is
	// keyed with `hide`: were both keyed with `show`, they would cover every value of "Database",
	// and the editor would take that parameter for the auth field (see above).
	{
		name: 'postgres',
		required: true,
		displayOptions: { show: { op: SQL_OPS, database: ['postgres'] } },
	},
	{
		name: 'mySql',
		required: true,
		displayOptions: { show: { op: SQL_OPS }, hide: { database: ['postgres'] } },
	},
	// n8n's S3 and AWS credentials, by the Service chosen; AWS's keyed with `hide`, as MySQL's.
	{
		name: 's3',
		required: true,
		displayOptions: { show: { op: S3_OPS, service: ['s3'] } },
	},
	{
		name: 'aws',
		required: true,
		displayOptions: { show: { op: S3_OPS }, hide: { service: ['s3'] } },
	},
];

/**
 * "Authentication": None or one of n8n's generic credential types; choosing a type brings n8n's
 * credential picker for it (the node declares each type, shown for its choice). One choice, not the
 * HTTP Request node's two (Generic Credential Type, then a type): its type picker is a credentialsSelect
 * that lists every generic type n8n has (Digest, OAuth1, ...), and a community node must also declare
 * the type to read it, so the editor showed the credential picker twice (test/e2e/editor.test.ts).
 */
export function httpAuthProperties(
	show: Record<string, NodeParameterValue[]>,
	hide?: Record<string, NodeParameterValue[]>,
	extraOptions: INodePropertyOptions[] = [],
): INodeProperties {
	return {
		displayName: 'Authentication',
		name: 'authentication',
		type: 'options',
		noDataExpression: true,
		default: 'none',
		displayOptions: { show, ...(hide && { hide }) },
		options: [
			{ name: 'None', value: 'none' },
			...GENERIC_AUTH_TYPES.map((value) => ({
				name: GENERIC_AUTH_NAMES[value],
				value,
				description: AUTH_DESCRIPTIONS[value],
			})),
			...extraOptions,
		],
		description:
			"One of n8n's own credential types. OAuth2 tokens are fetched, refreshed (when the API answers 401) and saved by n8n.",
	};
}

const AUTH_DESCRIPTIONS: Record<GenericAuthType, string> = {
	httpBasicAuth: "n8n's Basic Auth credential (user and password)",
	httpBearerAuth: "n8n's Bearer Auth credential (Authorization: Bearer)",
	httpCustomAuth: "n8n's Custom Auth credential (JSON headers, qs, body)",
	httpHeaderAuth: "n8n's Header Auth credential (one header, e.g. X-API-Key)",
	httpQueryAuth: "n8n's Query Auth credential (one query parameter)",
	oAuth2Api: "n8n's OAuth2 API credential (client credentials or authorization code)",
};

/** `op` and `with`, the same in the Poll Trigger and the Connector node. */
export function connectorProperties(withDescription: string): INodeProperties[] {
	return [
		{
			displayName: 'Op',
			name: 'op',
			type: 'options',
			noDataExpression: true,
			default: 'http.request',
			options: allOps().map((op) => ({
				name: op.name,
				value: op.name,
				description: op.description,
			})),
			description: 'The connector operation to call',
		},
		httpAuthProperties(V1_1, { op: NOT_HTTP_OPS }),
		{
			displayName: 'Database',
			name: 'database',
			type: 'options',
			noDataExpression: true,
			default: 'postgres',
			displayOptions: { show: { op: SQL_OPS } },
			options: [
				{ name: 'PostgreSQL', value: 'postgres', description: "With n8n's Postgres credential" },
				{
					name: 'MySQL or MariaDB',
					value: 'mySql',
					description: "With n8n's MySQL credential",
				},
			],
			description: "The database sql.query reads, and so which of n8n's credentials it uses",
		},
		{
			displayName: 'Service',
			name: 'service',
			type: 'options',
			noDataExpression: true,
			default: 's3',
			displayOptions: { show: { op: S3_OPS } },
			options: [
				{
					name: 'S3-Compatible',
					value: 's3',
					description: "MinIO, Ceph, Wasabi, Cloudflare R2, Backblaze...: with n8n's S3 credential",
				},
				{ name: 'AWS', value: 'aws', description: "Amazon S3: with n8n's AWS credential" },
			],
			description: "The object store the S3 ops call, and so which of n8n's credentials they use",
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			placeholder: 'https://inventory.example.com/api',
			displayOptions: { show: V1_1, hide: { op: NOT_HTTP_OPS } },
			description:
				'A relative request URL in With is resolved against this. Leave empty when With gives an absolute URL.',
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
export function connectorHttpAuth(
	node: INode,
	parameter: (name: string, fallback: unknown) => unknown,
): HttpAuthSettings {
	if (node.typeVersion < CONNECTOR_CREDENTIALS_VERSION) {
		return {
			auth:
				LEGACY_HTTP_CREDENTIAL in (node.credentials ?? {})
					? { kind: 'legacy', required: false }
					: { kind: 'none' },
		};
	}
	return {
		auth: resolveHttpAuth(parameter('authentication', 'none')),
		baseUrl: String(parameter('baseUrl', '') ?? ''),
	};
}
