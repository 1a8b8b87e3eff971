"""An owned upload, public or private, withdrawable: what a captioner's submission and a submitted
metric share (models), the one pair of services that publish, hide and withdraw one (services), and
the one pair of pages that call them (views)."""
