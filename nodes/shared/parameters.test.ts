import type { INode } from 'n8n-workflow';

import { allOps } from '../../core/connectors/registry';
import { connectorCredentials, connectorHttpAuth, connectorProperties } from './parameters';

const nodeAt = (
	typeVersion: number,
	credentials: Record<string, { id: string; name: string }> = {},
) => ({ name: 'Poll', typeVersion, credentials }) as unknown as INode;
const params = (values: Record<string, unknown>) => (name: string, fallback: unknown) =>
	values[name] ?? fallback;

describe('connectorHttpAuth', () => {
	it("version 1 uses this package's HTTP credential when one is set, else none, as before", () => {
		expect(
			connectorHttpAuth(nodeAt(1, { durableHttpApi: { id: '1', name: 'Source' } }), params({})),
		).toEqual({ auth: { kind: 'legacy', required: false } });
		expect(connectorHttpAuth(nodeAt(1), params({}))).toEqual({ auth: { kind: 'none' } });
	});

	it("version 1.1 reads Authentication and Base URL, and does not accept this package's credential", () => {
		expect(
			connectorHttpAuth(
				nodeAt(1.1),
				params({ authentication: 'oAuth2Api', baseUrl: 'https://api.example.com' }),
			),
		).toEqual({
			auth: { kind: 'generic', type: 'oAuth2Api' },
			baseUrl: 'https://api.example.com',
		});
		expect(connectorHttpAuth(nodeAt(1.1), params({}))).toEqual({
			auth: { kind: 'none' },
			baseUrl: '',
		});
		expect(() =>
			connectorHttpAuth(nodeAt(1.1), params({ authentication: 'durableHttpApi' })),
		).toThrow('Invalid value "durableHttpApi" for "«authentication»": must be one of None,');
	});
});

describe('connector credential descriptions', () => {
	it("no option parameter has every value covered by credentials' show conditions (n8n's editor would take it for the auth field and hide it)", () => {
		const properties = connectorProperties('');
		for (const property of properties.filter((p) => p.type === 'options')) {
			const shown = new Set(
				connectorCredentials.flatMap(
					(c) => (c.displayOptions?.show?.[property.name] ?? []) as unknown[],
				),
			);
			const values = (property.options ?? []).map((o) => (o as { value: unknown }).value);
			expect({ name: property.name, covered: values.every((v) => shown.has(v)) }).toEqual({
				name: property.name,
				covered: false,
			});
		}
	});

	it("every op has a credential in version 1.1: n8n's IMAP for IMAP ops, n8n's SFTP for SFTP ops, n8n's FTP for FTP ops, n8n's generic types for HTTP", () => {
		const imapOps = allOps()
			.filter((op) => op.transport === 'imap')
			.map((op) => op.name);
		const notHttpOps = allOps()
			.filter((op) => op.transport !== 'http')
			.map((op) => op.name);
		const imap = connectorCredentials.find((c) => c.name === 'imap');
		expect(imap?.displayOptions?.show).toEqual({ '@version': [1.1], op: imapOps });
		const sftpOps = allOps()
			.filter((op) => op.transport === 'sftp')
			.map((op) => op.name);
		const sftp = connectorCredentials.find((c) => c.name === 'sftp');
		expect(sftp?.displayOptions?.show).toEqual({ op: sftpOps });
		const ftp = connectorCredentials.find((c) => c.name === 'ftp');
		expect(ftp?.displayOptions?.show).toEqual({
			op: ['ftp.list', 'ftp.download', 'ftp.move', 'ftp.delete'],
		});
		const oauth2 = connectorCredentials.find((c) => c.name === 'oAuth2Api');
		expect(oauth2?.displayOptions).toEqual({
			show: { '@version': [1.1], authentication: ['oAuth2Api'] },
			hide: { op: notHttpOps },
		});
	});

	it("sql.query asks for n8n's Postgres or MySQL credential, by the Database chosen", () => {
		const postgres = connectorCredentials.find((c) => c.name === 'postgres');
		const mySql = connectorCredentials.find((c) => c.name === 'mySql');
		expect(postgres?.displayOptions).toEqual({
			show: { op: ['sql.query'], database: ['postgres'] },
		});
		expect(mySql?.displayOptions).toEqual({
			show: { op: ['sql.query'] },
			hide: { database: ['postgres'] },
		});
	});

	it("the S3 ops ask for n8n's S3 or AWS credential, by the Service chosen", () => {
		const s3Ops = ['s3.list', 's3.download', 's3.move', 's3.delete'];
		const s3 = connectorCredentials.find((c) => c.name === 's3');
		const aws = connectorCredentials.find((c) => c.name === 'aws');
		expect(s3?.displayOptions).toEqual({ show: { op: s3Ops, service: ['s3'] } });
		expect(aws?.displayOptions).toEqual({ show: { op: s3Ops }, hide: { service: ['s3'] } });
	});
});
