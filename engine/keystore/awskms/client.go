// Package awskms is keystore.KMSClient over AWS KMS with the AWS SDK for Go v2:
// credentials come from the SDK's standard chain (environment variables,
// shared files, web identity, container or instance roles), never from
// txengine's configuration.
package awskms

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"
	"github.com/txengine/txengine/engine/keystore"
)

// Options selects the KMS to speak to.
type Options struct {
	// Region is the AWS region; empty takes the SDK's (AWS_REGION...).
	Region string
	// Endpoint, when set, replaces KMS's endpoint (local-kms in tests).
	Endpoint string
	// Credentials, when set, replace the standard chain (tests).
	Credentials aws.CredentialsProvider
	// Conns is how many idle connections to KMS are kept (at least the
	// signer's concurrency, so that a burst does not open and close a TLS
	// connection per call beyond the SDK's default of 10); 0: the SDK's.
	Conns int
}

// Client is keystore.KMSClient over AWS KMS.
type Client struct {
	api *awskms.Client
}

var _ keystore.KMSClient = (*Client)(nil)

// New returns a client with credentials from the AWS SDK's standard chain.
// The SDK does not retry: keystore.KMSSigner retries throttled calls and
// holds an account while KMS does not answer.
func New(ctx context.Context, o Options) (*Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, awsconfig.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		opts = append(opts, awsconfig.WithCredentialsProvider(o.Credentials))
	}
	if o.Conns > 0 {
		opts = append(opts, awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = max(o.Conns, tr.MaxIdleConnsPerHost)
			tr.MaxIdleConns = max(o.Conns, tr.MaxIdleConns)
		})))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("kms: AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("kms: no region: set kms.region or AWS_REGION")
	}
	api := awskms.NewFromConfig(cfg, func(opt *awskms.Options) {
		opt.Retryer = aws.NopRetryer{}
		if o.Endpoint != "" {
			opt.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	return &Client{api: api}, nil
}

// CreateKey implements keystore.KMSClient.
func (c *Client) CreateKey(ctx context.Context, description string) (string, error) {
	return c.CreateKeyWith(ctx, keystore.KMSKeySpec, keystore.KMSKeyUsage, description)
}

// CreateKeyWith creates a key of the given spec and usage and returns its
// ARN (tests make keys of the wrong kind with it).
func (c *Client) CreateKeyWith(ctx context.Context, spec, usage, description string) (string, error) {
	out, err := c.api.CreateKey(ctx, &awskms.CreateKeyInput{
		KeySpec:     types.KeySpec(spec),
		KeyUsage:    types.KeyUsageType(usage),
		Description: aws.String(description),
		Tags:        []types.Tag{{TagKey: aws.String("created-by"), TagValue: aws.String("txengine")}},
	})
	if err != nil {
		return "", classify("CreateKey", err)
	}
	if out.KeyMetadata == nil || out.KeyMetadata.Arn == nil {
		return "", &keystore.KMSError{Fault: keystore.KMSUnavailable, Op: "CreateKey", Err: errors.New("answer without the key's ARN")}
	}
	return *out.KeyMetadata.Arn, nil
}

// DescribeKey implements keystore.KMSClient.
func (c *Client) DescribeKey(ctx context.Context, keyID string) (keystore.KMSKey, error) {
	out, err := c.api.DescribeKey(ctx, &awskms.DescribeKeyInput{KeyId: aws.String(keyID)})
	if err != nil {
		return keystore.KMSKey{}, classify("DescribeKey", err)
	}
	m := out.KeyMetadata
	if m == nil || m.Arn == nil {
		return keystore.KMSKey{}, &keystore.KMSError{Fault: keystore.KMSUnavailable, Op: "DescribeKey", Err: errors.New("answer without the key's metadata")}
	}
	spec := string(m.KeySpec)
	if spec == "" {
		spec = string(m.CustomerMasterKeySpec) //nolint:staticcheck // older KMS answers name the spec only there
	}
	return keystore.KMSKey{ARN: *m.Arn, Spec: spec, Usage: string(m.KeyUsage), Enabled: m.KeyState == types.KeyStateEnabled}, nil
}

// PublicKey implements keystore.KMSClient.
func (c *Client) PublicKey(ctx context.Context, keyID string) ([]byte, error) {
	out, err := c.api.GetPublicKey(ctx, &awskms.GetPublicKeyInput{KeyId: aws.String(keyID)})
	if err != nil {
		return nil, classify("GetPublicKey", err)
	}
	return out.PublicKey, nil
}

// DisableKey disables a key (its Sign calls are then refused).
func (c *Client) DisableKey(ctx context.Context, keyID string) error {
	if _, err := c.api.DisableKey(ctx, &awskms.DisableKeyInput{KeyId: aws.String(keyID)}); err != nil {
		return classify("DisableKey", err)
	}
	return nil
}

// CreateAlias names a key with alias (alias/...).
func (c *Client) CreateAlias(ctx context.Context, alias, keyID string) error {
	if _, err := c.api.CreateAlias(ctx, &awskms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: aws.String(keyID)}); err != nil {
		return classify("CreateAlias", err)
	}
	return nil
}

// Sign implements keystore.KMSClient.
func (c *Client) Sign(ctx context.Context, keyID string, digest []byte) ([]byte, error) {
	out, err := c.api.Sign(ctx, &awskms.SignInput{
		KeyId:            aws.String(keyID),
		Message:          digest,
		MessageType:      types.MessageTypeDigest,
		SigningAlgorithm: types.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, classify("Sign", err)
	}
	return out.Signature, nil
}

// classify wraps err, the failure of op, as an *keystore.KMSError whose fault
// follows KMS's error code; an error without one (a transport failure, a
// deadline) is KMSUnavailable.
func classify(op string, err error) error {
	return &keystore.KMSError{Fault: Fault(err), Op: op, Err: err}
}

// Fault is the keystore.KMSFault of an AWS SDK error.
func Fault(err error) keystore.KMSFault {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return keystore.KMSUnavailable
	}
	switch apiErr.ErrorCode() {
	case "ThrottlingException", "LimitExceededException", "RequestLimitExceeded", "TooManyRequestsException":
		return keystore.KMSThrottled
	case "AccessDeniedException", "DisabledException", "KMSInvalidStateException":
		return keystore.KMSDenied
	case "NotFoundException":
		return keystore.KMSNotFound
	case "InvalidKeyUsageException", "UnsupportedOperationException", "ValidationException", "InvalidArnException", "KMSInvalidSignatureException":
		return keystore.KMSInvalid
	}
	// KMSInternalException, DependencyTimeoutException, and the
	// credentials' faults (an expired or unrecognised token, which the
	// operator fixes without losing anything): try again later.
	return keystore.KMSUnavailable
}
