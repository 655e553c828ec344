import { createHash } from 'node:crypto';

import { canonicalQuery, signS3Request, uriEncode } from './s3Signature';

/*
 * Pinned by AWS's published examples of header-based SigV4 for S3
 * (AmazonS3/latest/API/sig-v4-header-based-auth.html: "Example: GET Object", "PUT Object",
 * "GET Bucket Lifecycle", "Get Bucket (List Objects)"), signed at their time, 2013-05-24T00:00:00Z.
 */
const example = {
	host: 'examplebucket.s3.amazonaws.com',
	credentials: {
		accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
		secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
	},
	region: 'us-east-1',
	now: Date.UTC(2013, 4, 24),
};
const scope = 'Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request';

describe("signS3Request: AWS's published S3 examples", () => {
	it('GET Object with a Range header', () => {
		const headers = signS3Request({
			...example,
			method: 'GET',
			path: '/test.txt',
			headers: { Range: 'bytes=0-9' },
		});
		expect(headers.authorization).toBe(
			`AWS4-HMAC-SHA256 ${scope},SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41`,
		);
		expect(headers['x-amz-date']).toBe('20130524T000000Z');
		expect(headers['x-amz-content-sha256']).toBe(
			'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
		);
		expect(headers.range).toBe('bytes=0-9');
		expect(headers).not.toHaveProperty('host');
	});

	it('PUT Object: a payload hash, a "$" in the key, a Date header', () => {
		const body = 'Welcome to Amazon S3.';
		const headers = signS3Request({
			...example,
			method: 'PUT',
			path: '/test$file.text',
			headers: {
				Date: 'Fri, 24 May 2013 00:00:00 GMT',
				'x-amz-storage-class': 'REDUCED_REDUNDANCY',
			},
			payloadSha256: createHash('sha256').update(body).digest('hex'),
		});
		expect(headers.authorization).toBe(
			`AWS4-HMAC-SHA256 ${scope},SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd`,
		);
	});

	it('GET Bucket Lifecycle: a query parameter without a value', () => {
		const headers = signS3Request({
			...example,
			method: 'GET',
			path: '/',
			query: { lifecycle: '' },
		});
		expect(headers.authorization).toMatch(
			/,Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543$/,
		);
	});

	it('Get Bucket (List Objects) with max-keys and prefix', () => {
		const headers = signS3Request({
			...example,
			method: 'GET',
			path: '/',
			query: { prefix: 'J', 'max-keys': '2' },
		});
		expect(headers.authorization).toMatch(
			/,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7$/,
		);
	});

	it('a session token is sent and signed as x-amz-security-token', () => {
		const withToken = signS3Request({
			...example,
			credentials: { ...example.credentials, sessionToken: 'FwoGZXIvYXdzE/token+=' },
			method: 'GET',
			path: '/test.txt',
		});
		const without = signS3Request({ ...example, method: 'GET', path: '/test.txt' });
		expect(withToken['x-amz-security-token']).toBe('FwoGZXIvYXdzE/token+=');
		expect(withToken.authorization).toContain(
			'SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,',
		);
		expect(without).not.toHaveProperty('x-amz-security-token');
		expect(withToken.authorization).not.toBe(without.authorization);
	});

	it('x-amz-date and the scope follow the clock passed in', () => {
		const headers = signS3Request({
			...example,
			now: Date.UTC(2026, 11, 3, 9, 8, 7, 654),
			method: 'GET',
			path: '/test.txt',
		});
		expect(headers['x-amz-date']).toBe('20261203T090807Z');
		expect(headers.authorization).toContain('/20261203/us-east-1/s3/aws4_request,');
	});
});

describe('uriEncode and canonicalQuery: RFC 3986, as SigV4 wants', () => {
	it.each([
		['in/a b.csv', 'in/a%20b.csv'],
		['in/a+b.csv', 'in/a%2Bb.csv'],
		["in/(1)!*'.csv", 'in/%281%29%21%2A%27.csv'],
		['in/Grüße.csv', 'in/Gr%C3%BC%C3%9Fe.csv'],
		['in/a&b=c.csv', 'in/a%26b%3Dc.csv'],
		['in/~a-b_c.d', 'in/~a-b_c.d'],
	])('path %j is sent as %j, "/" kept', (key, encoded) => {
		expect(uriEncode(key, true)).toBe(encoded);
		expect(decodeURIComponent(encoded)).toBe(key);
	});

	it('query names and values encode "/" too, and sort by name, then value', () => {
		expect(
			canonicalQuery({
				'start-after': "in/c d+(1)!*'ü&=.csv",
				prefix: 'in/',
				'list-type': '2',
			}),
		).toBe('list-type=2&prefix=in%2F&start-after=in%2Fc%20d%2B%281%29%21%2A%27%C3%BC%26%3D.csv');
	});
});
