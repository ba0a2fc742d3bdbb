package engine

import (
	"errors"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine/abicodec"
)

// CodecError maps an error of the ABI codec to the engine's: an
// *abicodec.FieldError becomes an *Error with the same field and message,
// invalid_argument (or not_found for a method the ABI lacks), so the API
// answers exactly as if the engine had refused the input itself. nil stays
// nil, and any other error is returned unchanged.
func CodecError(err error) error {
	var fe *abicodec.FieldError
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	code := CodeInvalidArgument
	if fe.Kind == abicodec.NotFound {
		code = CodeNotFound
	}
	return &Error{Code: code, Field: fe.Field, Message: fe.Message}
}

// DecodeLog decodes log with the events of a (abicodec.DecodeLog) into an
// Event at the log's place in the chain (address, block, transaction,
// index). ok is false for a log the codec does not decode.
func DecodeLog(a *abi.ABI, log *types.Log) (ev Event, ok bool) {
	d, ok := abicodec.DecodeLog(a, log)
	if !ok {
		return Event{}, false
	}
	return Event{
		Event:           d.Event,
		Signature:       d.Signature,
		Address:         log.Address,
		BlockNumber:     log.BlockNumber,
		BlockHash:       log.BlockHash,
		TransactionHash: log.TxHash,
		LogIndex:        log.Index,
		ReturnValues:    d.ReturnValues,
	}, true
}

// DecodeLogs decodes, in order, the logs that DecodeLog recognizes with the
// ABI that abis returns for the log's address (nil: unknown contract). Logs
// of unknown contracts, unknown or anonymous events and removed (reorged)
// logs are left out. The result is never nil, so it encodes as [] in JSON.
func DecodeLogs(abis func(addr common.Address) *abi.ABI, logs []*types.Log) []Event {
	events := make([]Event, 0, len(logs))
	for _, l := range logs {
		if l == nil || l.Removed {
			continue
		}
		if ev, ok := DecodeLog(abis(l.Address), l); ok {
			events = append(events, ev)
		}
	}
	return events
}
