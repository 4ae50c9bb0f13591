"""moto's DynamoDB-API server for the tests, on a free loopback port, one request at a time.

moto's own `moto_server` serves requests on threads, and its backend is not thread-safe: under
concurrent transactions it fails with 500s ("dictionary changed size during iteration").
Serving one request at a time gives the serializable transactions DynamoDB promises, while the
clients still send their requests concurrently.

Also, moto's TransactWriteItems backs its table up before applying a transaction, once per
item of the transaction, each time a deep copy of the whole table (the same state, copied again
and again): a ten-item transaction on a table of thousands of items takes seconds, and a burst
of them runs past the clients' timeouts. The backup here is taken once per table and
transaction: the same rollback state, the same behaviour.

Prints the port on the first line of stdout, then serves until killed.
"""

import copy
import sys

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

_transact_write_items = dynamodb_models.DynamoDBBackend.transact_write_items


def _transact_write_items_one_backup(self, transact_items):
    backups = {}

    class _OneBackupPerTable:
        @staticmethod
        def deepcopy(value, memo=None):
            if isinstance(value, Table):
                if id(value) not in backups:
                    backups[id(value)] = copy.deepcopy(value)
                return backups[id(value)]
            return copy.deepcopy(value, memo)

    dynamodb_models.copy = _OneBackupPerTable
    try:
        return _transact_write_items(self, transact_items)
    finally:
        dynamodb_models.copy = copy


dynamodb_models.DynamoDBBackend.transact_write_items = _transact_write_items_one_backup


def main() -> None:
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server(host, 0, app, threaded=False)
    # Room for every connection of a burst of concurrent clients.
    server.socket.listen(1024)
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
