// SPDX-License-Identifier: Apache-2.0
// The service's check that a wallet signed a hash, run deployless (the init code of an
// `eth_call` with no `to`, never deployed anywhere) in the order ERC-6492 defines
// (https://eips.ethereum.org/EIPS/eip-6492): a signature ending in the ERC's magic suffix is
// `abi.encode(factory, factoryCalldata, innerSignature)` for a wallet not deployed yet, whose
// factory call is made first (inside the call only: an eth_call changes no state); a wallet with
// code is asked `isValidSignature(hash, signature)` (ERC-1271); any other is checked by
// ecrecover. The constructor returns one byte: 1 when the signature is the wallet's.
// Compiled by solc 0.8.26 (optimizer on, 200 runs) into signature_check.hex: the bytes the
// service sends (`adapters::chain::signatures`); a devnet test compiles it again and compares.
pragma solidity 0.8.26;

contract SignatureCheck {
    bytes32 private constant SUFFIX = 0x6492649264926492649264926492649264926492649264926492649264926492;
    bytes4 private constant ERC1271_VALID = 0x1626ba7e;

    constructor(address signer, bytes32 hash, bytes memory signature) {
        bool valid = check(signer, hash, signature);
        assembly {
            mstore(0, valid)
            return(31, 1)
        }
    }

    function check(address signer, bytes32 hash, bytes memory signature) private returns (bool) {
        uint256 length = signature.length;
        if (length >= 32 && tail(signature) == SUFFIX) {
            // The wrapper without its suffix, decoded in place.
            assembly {
                mstore(signature, sub(length, 32))
            }
            (address factory, bytes memory factoryCalldata, bytes memory inner) =
                abi.decode(signature, (address, bytes, bytes));
            if (signer.code.length == 0) {
                (bool deployed,) = factory.call(factoryCalldata);
                if (!deployed) return false;
            }
            signature = inner;
        }
        if (signer.code.length > 0) {
            (bool answered, bytes memory magic) =
                signer.staticcall(abi.encodeWithSelector(ERC1271_VALID, hash, signature));
            return answered && magic.length >= 32 && abi.decode(magic, (bytes4)) == ERC1271_VALID;
        }
        if (signature.length != 65) return false;
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 32))
            s := mload(add(signature, 64))
            v := byte(0, mload(add(signature, 96)))
        }
        if (v < 27) v += 27;
        address recovered = ecrecover(hash, v, r, s);
        return recovered != address(0) && recovered == signer;
    }

    function tail(bytes memory data) private pure returns (bytes32 word) {
        assembly {
            word := mload(add(data, mload(data)))
        }
    }
}
