import type {
	INodeCredentialTestResult,
	INodeProperties,
	INodePropertyCollection,
} from 'n8n-workflow';

import type { GenericAuthType } from '../../core/connectors/httpAuth';
import { DurableHttpApi } from '../../credentials/DurableHttpApi.credentials';
import { DurableImapApi } from '../../credentials/DurableImapApi.credentials';
import { PollHistoryPostgres } from '../../credentials/PollHistoryPostgres.credentials';
import { RoundTripCallbackApi } from '../../credentials/RoundTripCallbackApi.credentials';
import { PAGING_OPTIONS } from './pagination';
import { GENERIC_AUTH_NAMES } from './parameters';

/**
 * The one translator of the core's words into the editor's. The core names fields by id
 * (core/configError.ts `fieldRef`: `«queueLimit»`, `«imap:host»`, `«imap:»`); here each becomes what
 * the editor shows: the displayName of the node's property (in a collection too) or of the
 * credential's field, and the credential type's name. errors.ts finds a node's parameters.
 */

/** A credential type as the editor shows it: its name and its fields' labels. */
interface CredentialWords {
	displayName: string;
	fields: Record<string, string>;
}

const ownCredential = ({
	displayName,
	properties,
}: {
	displayName: string;
	properties: INodeProperties[];
}): CredentialWords => ({
	displayName,
	fields: Object.fromEntries(properties.map((property) => [property.name, property.displayName])),
});

/** The fields of n8n's generic HTTP credentials that messages name (core/connectors/httpAuth.ts). */
const GENERIC_AUTH_FIELDS: Partial<Record<GenericAuthType, Record<string, string>>> = {
	httpHeaderAuth: { name: 'Name' },
	httpQueryAuth: { name: 'Name' },
	httpCustomAuth: { json: 'JSON' },
};

/**
 * The credential types messages name: this package's (from their descriptions) and n8n's own, whose
 * labels are n8n's (n8n-nodes-base 2.41.1: Imap, Sftp, Ftp, Postgres, MySql, S3, Aws, the generic HTTP types).
 */
export const CREDENTIALS: Record<string, CredentialWords> = {
	durableHttpApi: ownCredential(new DurableHttpApi()),
	durableImapApi: ownCredential(new DurableImapApi()),
	pollHistoryPostgres: ownCredential(new PollHistoryPostgres()),
	roundTripCallbackApi: ownCredential(new RoundTripCallbackApi()),
	imap: { displayName: 'IMAP', fields: { host: 'Host', port: 'Port' } },
	sftp: { displayName: 'SFTP', fields: { host: 'Host', port: 'Port' } },
	ftp: { displayName: 'FTP', fields: { host: 'Host', port: 'Port' } },
	postgres: {
		displayName: 'Postgres',
		fields: { host: 'Host', port: 'Port', sshTunnel: 'SSH Tunnel' },
	},
	mySql: { displayName: 'MySQL', fields: { host: 'Host', port: 'Port', sshTunnel: 'SSH Tunnel' } },
	s3: {
		displayName: 'S3',
		fields: {
			endpoint: 'S3 Endpoint',
			accessKeyId: 'Access Key ID',
			secretAccessKey: 'Secret Access Key',
		},
	},
	aws: {
		displayName: 'AWS (IAM)',
		fields: {
			region: 'Region',
			accessKeyId: 'Access Key ID',
			secretAccessKey: 'Secret Access Key',
			sessionToken: 'Session Token',
			s3Endpoint: 'S3 Endpoint',
		},
	},
	...Object.fromEntries(
		Object.entries(GENERIC_AUTH_NAMES).map(([type, displayName]) => [
			type,
			{ displayName, fields: GENERIC_AUTH_FIELDS[type as GenericAuthType] ?? {} },
		]),
	),
};

/** The label of the property `name` among `properties`, in collections too (depth first). */
function labelAmong(
	properties: ReadonlyArray<INodeProperties | INodePropertyCollection>,
	name: string,
): string | undefined {
	for (const property of properties) {
		if (property.name === name) return property.displayName;
		const nested = [
			...('values' in property ? property.values : []),
			...('options' in property ? (property.options ?? []) : []).filter(
				(option): option is INodeProperties | INodePropertyCollection => 'displayName' in option,
			),
		];
		const label = labelAmong(nested, name);
		if (label !== undefined) return label;
	}
	return undefined;
}

/**
 * A node field's label. The core names the paging settings in its own terms (`pagination.nextUrl`),
 * the node by the options of n8n's HTTP Request node it reads them from (nodes/shared/pagination.ts).
 */
export function fieldLabel(properties: INodeProperties[], field: string): string | undefined {
	const name = (PAGING_OPTIONS as Record<string, string>)[field] ?? field;
	return labelAmong(properties, name);
}

/** A credential type's name, and the label of one of its fields. */
export function credentialLabel(type: string, field?: string): string | undefined {
	const words = CREDENTIALS[type];
	return field === undefined ? words?.displayName : words?.fields[field];
}

const REFERENCE = /«([\w.]+)(?::([\w.]*))?»/g;

/**
 * A text of the core (a message, a warning) with the fields it names said as the editor labels
 * them: a node's among `properties` (unset: credentials' only); a field without a label stays its id.
 */
export function sayFields(text: string, properties?: INodeProperties[]): string {
	return text.replace(REFERENCE, (_reference, first: string, field: string | undefined) => {
		if (field === undefined) return (properties && fieldLabel(properties, first)) ?? first;
		return credentialLabel(first, field || undefined) ?? (field || first);
	});
}

/** A credential test's failure, said in the editor's words (a ConfigError names the credential's field). */
export function credentialTestFailure(error: unknown): INodeCredentialTestResult {
	return {
		status: 'Error',
		message: sayFields(error instanceof Error ? error.message : String(error)),
	};
}
