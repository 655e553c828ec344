import type { ICredentialDataDecryptedObject } from 'n8n-workflow';

import { ConfigError } from '../../core/configError';
import type { S3Connection } from '../../core/connectors/types';

/**
 * n8n's two credentials for object stores, as the "Service" parameter chooses them: `s3` (its S3
 * node's, for S3-compatible stores: MinIO, Ceph, Wasabi, R2, Backblaze) and `aws` (its AWS nodes').
 * The S3 ops sign their requests themselves (core/connectors/s3Signature.ts) for both: `s3` has no
 * `authenticate` of its own, and `aws`'s changed signer between n8n 1.123 and 2.41 (docs/design/s3-ftp.md).
 */
export type S3CredentialType = 's3' | 'aws';

/** The "Service" parameter's value is the credential type's name. */
export function s3CredentialType(service: unknown): S3CredentialType {
	if (service === 's3' || service === 'aws') return service;
	throw new ConfigError('service', service, 'must be s3 (S3-compatible) or aws (AWS)');
}

/** The S3 ops' connection from a stored `s3` or `aws` credential, each field checked by its name. */
export function s3Connection(
	type: S3CredentialType,
	data: ICredentialDataDecryptedObject,
): S3Connection {
	const keys = {
		accessKeyId: requiredField('accessKeyId', data, type),
		secretAccessKey: requiredField('secretAccessKey', data, type, true),
	};
	if (type === 's3') {
		return {
			// n8n's S3 node requires the endpoint; its region defaults to us-east-1 (the credential's default).
			endpoint: endpointField('endpoint', data.endpoint, type, '"http://127.0.0.1:9000"'),
			region: text(data.region) || 'us-east-1',
			...keys,
			pathStyle: data.forcePathStyle === true,
			skipTlsVerify: data.ignoreSSLIssues === true,
		};
	}
	const region = requiredField('region', data, type);
	// As n8n's AWS credential: its S3 endpoint when set (with `{region}` filled in), else AWS's own.
	const custom = text(data.s3Endpoint).replace('{region}', region);
	return {
		endpoint: custom
			? endpointField('s3Endpoint', custom, type, '"https://s3.eu-west-1.amazonaws.com"')
			: `https://s3.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`,
		region,
		...keys,
		...(data.temporaryCredentials === true && {
			sessionToken: requiredField('sessionToken', data, type, true),
		}),
		// AWS serves every bucket from its own host; a custom endpoint (a VPC endpoint, a store
		// speaking S3) is addressed path-style, one host for all buckets.
		pathStyle: custom !== '',
	};
}

function text(value: unknown): string {
	return typeof value === 'string' ? value.trim() : '';
}

function requiredField(
	field: string,
	data: ICredentialDataDecryptedObject,
	credential: S3CredentialType,
	secret = false,
): string {
	const value = text(data[field]);
	if (value === '')
		throw new ConfigError(field, data[field] ?? '', 'must not be empty', { credential, secret });
	return value;
}

function endpointField(
	field: string,
	value: unknown,
	credential: S3CredentialType,
	example: string,
): string {
	const endpoint = text(value);
	let url: URL | undefined;
	try {
		url = new URL(endpoint);
	} catch {
		url = undefined;
	}
	if (!url || !/^https?:$/.test(url.protocol))
		throw new ConfigError(
			field,
			value ?? '',
			`must be the store's URL, starting with http:// or https://, such as ${example}`,
			{ credential },
		);
	return endpoint;
}
