import { s3Connection, s3CredentialType } from './s3Credential';

const keys = { accessKeyId: ' AKID ', secretAccessKey: 'secret' };

describe("n8n's S3 and AWS credentials → connection", () => {
	it('S3: endpoint, region, keys; Force Path Style and Ignore SSL Issues as stored', () => {
		expect(
			s3Connection('s3', {
				endpoint: ' https://minio.example.com:9000 ',
				region: 'eu-central-1',
				...keys,
				forcePathStyle: true,
				ignoreSSLIssues: true,
			}),
		).toEqual({
			endpoint: 'https://minio.example.com:9000',
			region: 'eu-central-1',
			accessKeyId: 'AKID',
			secretAccessKey: 'secret',
			pathStyle: true,
			skipTlsVerify: true,
		});
	});

	it("S3: an empty region signs for us-east-1 (the credential's default); virtual-hosted unless forced", () => {
		expect(s3Connection('s3', { endpoint: 'http://127.0.0.1:9000', region: '', ...keys })).toEqual(
			expect.objectContaining({ region: 'us-east-1', pathStyle: false, skipTlsVerify: false }),
		);
	});

	it("AWS: AWS's endpoint for the region (.com.cn in China), virtual-hosted; the session token only with temporary credentials", () => {
		expect(s3Connection('aws', { region: 'eu-west-1', ...keys, sessionToken: 'stale' })).toEqual({
			endpoint: 'https://s3.eu-west-1.amazonaws.com',
			region: 'eu-west-1',
			accessKeyId: 'AKID',
			secretAccessKey: 'secret',
			pathStyle: false,
		});
		expect(
			s3Connection('aws', {
				region: 'cn-north-1',
				...keys,
				temporaryCredentials: true,
				sessionToken: 'tok',
			}),
		).toEqual(
			expect.objectContaining({
				endpoint: 'https://s3.cn-north-1.amazonaws.com.cn',
				sessionToken: 'tok',
			}),
		);
	});

	it('AWS: a custom S3 endpoint, its {region} filled in, addressed path-style', () => {
		expect(
			s3Connection('aws', {
				region: 'eu-west-1',
				...keys,
				customEndpoints: true,
				s3Endpoint: 'https://bucket.vpce-1.s3.{region}.vpce.amazonaws.com',
			}),
		).toEqual(
			expect.objectContaining({
				endpoint: 'https://bucket.vpce-1.s3.eu-west-1.vpce.amazonaws.com',
				pathStyle: true,
			}),
		);
	});

	it.each([
		[
			's3' as const,
			{ endpoint: 'minio:9000', ...keys },
			'Invalid value "minio:9000" for "«s3:endpoint»" in the «s3:» credential: must be the store\'s URL, starting with http:// or https://, such as "http://127.0.0.1:9000"',
		],
		[
			's3' as const,
			{ endpoint: 'ftp://store', ...keys },
			'Invalid value "ftp://store" for "«s3:endpoint»"',
		],
		[
			's3' as const,
			{ endpoint: 'http://store', accessKeyId: '', secretAccessKey: 's' },
			'Invalid value "" for "«s3:accessKeyId»" in the «s3:» credential: must not be empty',
		],
		[
			'aws' as const,
			{ region: 'eu-west-1', accessKeyId: 'a' },
			'Invalid value "" for "«aws:secretAccessKey»" in the «aws:» credential: must not be empty',
		],
		[
			'aws' as const,
			{ ...keys },
			'Invalid value "" for "«aws:region»" in the «aws:» credential: must not be empty',
		],
		[
			'aws' as const,
			{ region: 'eu-west-1', ...keys, temporaryCredentials: true },
			'Invalid value "" for "«aws:sessionToken»" in the «aws:» credential: must not be empty',
		],
		[
			'aws' as const,
			{ region: 'eu-west-1', ...keys, s3Endpoint: 's3.local' },
			'Invalid value "s3.local" for "«aws:s3Endpoint»" in the «aws:» credential',
		],
	])('%s %j: refused naming the field and its value', (type, data, message) => {
		expect(() => s3Connection(type, data)).toThrow(message);
	});

	it('Service: s3 or aws, anything else refused naming it', () => {
		expect(s3CredentialType('aws')).toBe('aws');
		expect(() => s3CredentialType('gcs')).toThrow(
			'Invalid value "gcs" for "«service»": must be s3 (S3-compatible) or aws (AWS)',
		);
	});
});
