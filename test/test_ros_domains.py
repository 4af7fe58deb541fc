"""Two xdist workers never share a ROS domain (test/ros_domains.py, test/conftest.py)."""
import os
import re

import pytest
import ros_domains

HERE = os.path.dirname(os.path.abspath(__file__))
# A domain named in a test module rather than drawn from its worker's slice.
OWN_DOMAIN = re.compile(r'(?i:domain(?:_id)?)\s*=\s*(?:\d|random)|ROS_DOMAIN_ID\s*=\s*(?:str\(\s*'
                        r"random|['\"]?\d)|ROS_DOMAIN_ID'\]\s*=\s*['\"]?\d")


@pytest.mark.parametrize('count', [1, 2, 3, 8])
def test_the_worker_slices_are_disjoint_and_inside_the_range(count):
    lo, hi = ros_domains.domain_range()
    slices = [ros_domains.worker_range(f'gw{k}', count) for k in range(count)]
    domains = [set(range(a, b + 1)) for a, b in slices]
    assert all(lo <= a <= b <= hi for a, b in slices), slices
    assert sum(map(len, domains)) == len(set().union(*domains)), slices
    if count == 1:
        assert slices == [(lo, hi)]


def test_a_process_outside_xdist_draws_from_the_whole_range():
    assert ros_domains.worker_range('', 1, '5-9') == (5, 9)
    assert ros_domains.worker_range('gw1', 2, '5-9') == (7, 8)


def test_this_worker_default_domain_is_in_its_slice():
    lo, hi = ros_domains.worker_range()
    assert lo <= int(os.environ['ROS_DOMAIN_ID']) <= hi
    assert all(lo <= ros_domains.pick() <= hi for _ in range(50))


@pytest.mark.parametrize('text', ['', '7', '9-3', '1-300', 'a-b', '-1-4'])
def test_a_malformed_range_is_refused_with_its_text(text):
    with pytest.raises(ValueError, match='RNEA_TEST_DOMAINS'):
        ros_domains.domain_range(text)


def test_more_workers_than_domains_is_refused():
    with pytest.raises(ValueError, match='fewer domains'):
        ros_domains.worker_range('gw0', 4, '1-2')


def test_no_test_module_names_a_domain_of_its_own():
    named = []
    for name in sorted(os.listdir(HERE)):
        if name.endswith('.py') and name != os.path.basename(__file__):
            with open(os.path.join(HERE, name), encoding='utf-8') as stream:
                named += [f'{name}: {m.group(0)}' for m in OWN_DOMAIN.finditer(stream.read())]
    assert not named, named
