"""Where stored files live (plumbing/storage.py): a local folder, or an S3-compatible object store."""

from __future__ import annotations


def local_storage() -> dict:
    """MEDIA_ROOT on this machine (followed when a test changes it), names kept as content addresses."""
    return {"BACKEND": "plumbing.storage.ContentAddressedFileSystemStorage"}


def object_storage(bucket: str, endpoint: str | None, region: str | None, prefix: str | None) -> dict:
    """An S3-compatible bucket (django-storages). Credentials come the AWS way: AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY, or the machine's role. Objects are private: served through our views,
    which apply the visibility rule, never by a public or signed bucket URL."""
    options: dict[str, object] = {
        "bucket_name": bucket,
        "location": (prefix or "").strip("/"),
        "file_overwrite": True,  # a name is its content's address: the same name holds the same bytes
        "default_acl": None,  # the bucket's own policy (private); AWS buckets without ACLs refuse one
        "querystring_auth": True,
        "signature_version": "s3v4",
        # A file read from the bucket (a video, say) is spooled to disk past 8 MB, never held whole
        # in a web or worker process's memory.
        "max_memory_size": 8 * 1024 * 1024,
    }
    if endpoint:  # MinIO, moto, Ceph …: the bucket in the path, not in the host name
        options |= {"endpoint_url": endpoint, "addressing_style": "path"}
    if region:
        options["region_name"] = region
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}
